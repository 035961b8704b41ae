// larmor: the workstation (Qt 6 + VTK). Thin: the program lives in liblarmor_ui (ui/app_main.cpp), so
// the GUI tests drive the same code.
#include "app_main.hpp"
#include "larmor/util/openmp_policy.hpp"

int main(int argc, char** argv) {
  larmor::usePassiveOpenMpWait(argv);
  return larmor::ui::larmorMain(argc, argv);
}
