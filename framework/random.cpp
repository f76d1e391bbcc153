#include "framework/random.h"

namespace hr {

Generator& global_generator() {
  static Generator gen;
  return gen;
}

}  // namespace hr
