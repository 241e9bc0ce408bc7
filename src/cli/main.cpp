#include <cstdio>

int main() {
  std::puts("steadyocr");
  return 0;
}
