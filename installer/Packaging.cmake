# The installed layout and the Debian package (docs/packaging.md). `make package` (or `cpack` in the
# build folder) writes larmor_<version>_<arch>.deb; inside it, under /usr:
#   bin/larmor, bin/larmor-cli                 RUNPATH $ORIGIN/../lib  (CMAKE_INSTALL_RPATH, top level)
#   lib/liblarmor_engine.so.N, liblarmor_ui.so.N  RUNPATH $ORIGIN
#   lib/larmor/liblarmor_cuda.so               the CUDA plugin: the engine dlopens it from its own folder
#                                              + /larmor (registry.cpp, dladdr), so /usr and an unpacked
#                                              copy anywhere both work without LD_LIBRARY_PATH
#   share/applications/io.larmor.Larmor.desktop, share/metainfo/io.larmor.Larmor.metainfo.xml,
#   share/icons/hicolor/{16x16..256x256,scalable}/apps/larmor.*, share/man/man1/larmor{,-cli}.1.gz
# CUDA is never a hard dependency: Depends comes from dpkg-shlibdeps run on everything but the plugin
# (CPackProjectConfig.cmake.in); the CUDA runtime packages are only suggested. Where they are missing
# the plugin does not load and the program runs on the CPU.

set(LARMOR_HAVE_GUI OFF)
if(TARGET larmor_ui)  # `larmor` itself is added at the end of the top directory (app/CMakeLists.txt)
  set(LARMOR_HAVE_GUI ON)
endif()

# --- desktop integration (with the workstation) --------------------------------------------------------
set(_larmor_res ${PROJECT_SOURCE_DIR}/resources)
if(LARMOR_HAVE_GUI)
  configure_file(${_larmor_res}/io.larmor.Larmor.metainfo.xml.in
                 ${CMAKE_BINARY_DIR}/share/metainfo/io.larmor.Larmor.metainfo.xml @ONLY)
  install(FILES ${_larmor_res}/io.larmor.Larmor.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${CMAKE_BINARY_DIR}/share/metainfo/io.larmor.Larmor.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES ${_larmor_res}/icons/larmor.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  # PNGs rendered from larmor.svg by resources/icons/render-hicolor.sh (kept in the repository).
  install(DIRECTORY ${_larmor_res}/icons/hicolor/ DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor
          FILES_MATCHING PATTERN "*.png")
endif()

# --- man pages: docs/man/*.1.in with the version filled in, gzipped as Debian wants them ----------------
set(_larmor_man_pages larmor-cli.1)
if(LARMOR_HAVE_GUI)
  list(APPEND _larmor_man_pages larmor.1)
endif()
set(_larmor_man_outputs "")
foreach(page IN LISTS _larmor_man_pages)
  set(_src ${PROJECT_SOURCE_DIR}/docs/man/${page}.in)
  set(_out ${CMAKE_BINARY_DIR}/share/man/man1/${page})
  configure_file(${_src} ${_out} @ONLY)
  # -n: no name or time stamp in the archive, so the package is reproducible.
  add_custom_command(OUTPUT ${_out}.gz
                     COMMAND gzip -9 -n -k -f ${_out}
                     DEPENDS ${_out}
                     COMMENT "Compressing man page ${page}"
                     VERBATIM)
  list(APPEND _larmor_man_outputs ${_out}.gz)
  install(FILES ${_out}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endforeach()
add_custom_target(larmor_man_pages ALL DEPENDS ${_larmor_man_outputs})

# --- CPack: one .deb ---------------------------------------------------------------------------------
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "larmor")
set(CPACK_PACKAGE_VENDOR "Larmor")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MRI reconstruction workstation for the GPU and the CPU")
set(CPACK_PACKAGE_DESCRIPTION
    "Larmor reconstructs magnetic resonance images from raw k-space (ISMRMRD, BART .cfl): Cartesian FFT, \
gridding, TRON radial, the exact DFT, iterative CG with regularization and GRAPPA, with quality metrics \
(percent error, PSNR, SSIM) and timings for every stage. It contains the Qt workstation (larmor) and the \
command-line tool (larmor-cli). The CUDA backend is a plugin: on a machine without an NVIDIA GPU or \
without the CUDA libraries everything runs on the CPU.")
set(LARMOR_PACKAGE_MAINTAINER "Larmor maintainers <maintainers@larmor.invalid>"
    CACHE STRING "Maintainer field of the .deb")
set(CPACK_PACKAGE_CONTACT "${LARMOR_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")  # larmor_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Not CPack's own shlibdeps: it would run dpkg-shlibdeps on the CUDA plugin too and make libcudart,
# cuFFT, cuBLAS and cuSOLVER hard dependencies (or fail where they belong to no package). The project
# config file runs it on the binaries except the plugin and sets CPACK_DEBIAN_PACKAGE_DEPENDS.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)

# What dpkg-shlibdeps cannot see: Qt loads the SVG icon engine as a plugin.
set(LARMOR_PACKAGE_EXTRA_DEPENDS "")
if(LARMOR_HAVE_GUI)
  set(LARMOR_PACKAGE_EXTRA_DEPENDS "libqt6svg6")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "qt6-qpa-plugins")
endif()
# The Python module (python/, docs/python.md) is built for one Python minor version and imports NumPy.
if(LARMOR_HAVE_PYTHON)
  math(EXPR _larmor_py_next "${Python3_VERSION_MINOR} + 1")
  list(APPEND LARMOR_PACKAGE_EXTRA_DEPENDS "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}~)"
       "python3 (<< ${Python3_VERSION_MAJOR}.${_larmor_py_next})" "python3-numpy")
  string(APPEND CPACK_PACKAGE_DESCRIPTION " Python 3 scripts use the same engine on NumPy arrays: import larmor.")
endif()
# The CUDA runtime libraries the plugin links against, as NVIDIA's apt repository names them
# (cuda-cudart-13-0, libcufft-13-0, ...): suggested, never required.
if(LARMOR_HAVE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(_cv "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
    set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cuda-cudart-${_cv}, libcufft-${_cv}, libcublas-${_cv}, libcusolver-${_cv}")
  endif()
endif()

# The ELF files whose libraries become Depends: everything installed except the CUDA plugin.
set(LARMOR_PACKAGE_SHLIBDEPS_FILES "$<TARGET_FILE:larmor-cli>;$<TARGET_FILE:larmor_engine>")
if(LARMOR_HAVE_PYTHON)
  list(APPEND LARMOR_PACKAGE_SHLIBDEPS_FILES "$<TARGET_FILE:_larmor>")
endif()
if(LARMOR_HAVE_GUI)
  list(APPEND LARMOR_PACKAGE_SHLIBDEPS_FILES "$<TARGET_FILE:larmor>" "$<TARGET_FILE:larmor_ui>")
endif()
# Where dpkg-shlibdeps finds our own libraries (it does not follow $ORIGIN outside a package tree).
set(LARMOR_PACKAGE_SHLIBDEPS_DIR "$<TARGET_FILE_DIR:larmor_engine>")
configure_file(${CMAKE_CURRENT_LIST_DIR}/CPackProjectConfig.cmake.in
               ${CMAKE_BINARY_DIR}/CPackProjectConfig.cmake.gen @ONLY)
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/CPackProjectConfig.cmake
              INPUT ${CMAKE_BINARY_DIR}/CPackProjectConfig.cmake.gen)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/CPackProjectConfig.cmake)

set(CPACK_SOURCE_GENERATOR "TGZ")
set(CPACK_SOURCE_IGNORE_FILES "/build/" "/\\\\.git/" "/out/" "/\\\\.snap/")
include(CPack)
