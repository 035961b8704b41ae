// larmor: the workstation (Qt 6 + VTK). Thin: the program lives in liblarmor_ui (ui/app_main.cpp), so
// the GUI tests drive the same code.
#include "app_main.hpp"

int main(int argc, char** argv) { return larmor::ui::larmorMain(argc, argv); }
