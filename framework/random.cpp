#include "framework/random.h"

namespace hr {

Generator& global_generator() {
  static Generator gen;
  return gen;
}

BatchRows& batch_rows() {
  static BatchRows rows;
  return rows;
}

}  // namespace hr
