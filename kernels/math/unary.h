// Elementwise functions and their derivatives, shared by every backend.
#pragma once

#include "kernels/backend.h"
#include "kernels/math/hd.h"

namespace hr::math {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// GELU, erf form: x * Phi(x)
HR_HD float gelu(float x) { return 0.5f * x * (1.f + erff(x * kInvSqrt2)); }
HR_HD float gelu_grad(float x) { return 0.5f * (1.f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x); }

HR_HD float sigmoid(float x) {
  // stable for large |x|
  if (x >= 0.f) return 1.f / (1.f + expf(-x));
  const float e = expf(x);
  return e / (1.f + e);
}

HR_HD float unary_forward(Unary op, float x, float a, float b) {
  switch (op) {
    case Unary::Copy: return x;
    case Unary::Neg: return -x;
    case Unary::Exp: return expf(x);
    case Unary::Log: return logf(x);
    case Unary::Sigmoid: return sigmoid(x);
    case Unary::Tanh: return tanhf(x);
    case Unary::Relu: return x > 0.f ? x : 0.f;
    case Unary::Gelu: return gelu(x);
    case Unary::Sqrt: return sqrtf(x);
    case Unary::Square: return x * x;
    case Unary::Scale: return a * x;
    case Unary::AddScalar: return x + a;
    case Unary::Clamp: return fminf(fmaxf(x, a), b);
    case Unary::Pow: return powf(x, a);
  }
  return 0.f;
}

// dy/dx given the input x and the output y = f(x)
HR_HD float unary_derivative(Unary op, float x, float y, float a, float b) {
  switch (op) {
    case Unary::Copy: return 1.f;
    case Unary::Neg: return -1.f;
    case Unary::Exp: return y;
    case Unary::Log: return 1.f / x;
    case Unary::Sigmoid: return y * (1.f - y);
    case Unary::Tanh: return 1.f - y * y;
    case Unary::Relu: return x > 0.f ? 1.f : 0.f;
    case Unary::Gelu: return gelu_grad(x);
    case Unary::Sqrt: return 0.5f / y;
    case Unary::Square: return 2.f * x;
    case Unary::Scale: return a;
    case Unary::AddScalar: return 1.f;
    case Unary::Clamp: return (x >= a && x <= b) ? 1.f : 0.f;  // the clamp is the identity inside [a, b]
    case Unary::Pow: return a * powf(x, a - 1.f);
  }
  return 0.f;
}

HR_HD float binary_forward(Binary op, float a, float b, float scalar) {
  switch (op) {
    case Binary::Add: return a + b;
    case Binary::Sub: return a - b;
    case Binary::Mul: return a * b;
    case Binary::Div: return a / b;
    case Binary::MaskFill: return b != 0.f ? scalar : a;
  }
  return 0.f;
}

}  // namespace hr::math
