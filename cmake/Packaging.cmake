# Debian packages through CPack (packaging/build-deb.sh drives it):
#   quantscope-cli  the headless CLI, the sentencepiece tokenizer plugin, man page, sample recipes
#                   (no Qt Widgets: for servers and GPU machines)
#   quantscope      the GUI workbench and its desktop entry, icons and AppStream metadata;
#                   depends on quantscope-cli of the same version
# Shared-library dependencies come from dpkg-shlibdeps, so they name exactly the Debian packages
# the build linked (libtorch, Qt 6, QCustomPlot, sentencepiece).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME quantscope)
set(CPACK_PACKAGE_VENDOR "Quantscope developers")
# Maintainer field and changelog signature. example.org is the documentation domain (RFC 2606):
# whoever publishes the package sets a real address here.
set(QS_PACKAGE_MAINTAINER "Quantscope developers <packages@quantscope.example.org>"
    CACHE STRING "Name <address> of the Debian packages' maintainer")
set(CPACK_PACKAGE_CONTACT "${QS_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli)
if(QS_BUILD_GUI)
  list(APPEND CPACK_COMPONENTS_ALL gui)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The Debian revision of this packaging (0.1.0-1), matching packaging/debian/changelog.in.
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME quantscope-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
# LibTorch's float matmuls go through the libblas.so.3 alternative; netlib's reference BLAS is
# ~30x slower (docs/pitfalls.md), so the CLI asks for OpenBLAS by name, the OpenMP build first
# (one thread team with LibTorch's; packaging/install-deps.sh selects it).
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "libopenblas0-openmp | libopenblas0")
string(CONCAT CPACK_COMPONENT_CLI_DESCRIPTION
    "LLM post-training quantization workbench (command line)\n"
    "Quantscope quantizes large language models after training, following\n"
    "AMD Quark's definitions (int8, int4, fp8 and MX formats).\n"
    "quantscope-cli inspects Hugging Face checkpoints, measures perplexity,\n"
    "reports the per-layer quantization error, writes fake-quantized\n"
    "checkpoints and replays a saved recipe to the same output. It needs no\n"
    "Qt Widgets: this package is what a server installs.")
set(CPACK_DEBIAN_GUI_PACKAGE_NAME quantscope)
set(CPACK_DEBIAN_GUI_PACKAGE_SECTION science)
set(CPACK_COMPONENT_GUI_DEPENDS cli)
string(CONCAT CPACK_COMPONENT_GUI_DESCRIPTION
    "LLM post-training quantization workbench (desktop application)\n"
    "Quantscope quantizes large language models after training, following\n"
    "AMD Quark's definitions. The workbench shows a checkpoint's layer tree\n"
    "with the per-layer quantization error, activation ranges and\n"
    "histograms, and edits the quantization recipe (scheme, overrides,\n"
    "exclusions, KV cache, calibration) while analysis, evaluation and\n"
    "export run in the background.")

# Debian policy: every package carries its copyright file and a changelog, the latter gzipped.
set(QS_DEB_CHANGELOG ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in
               ${CMAKE_BINARY_DIR}/packaging/changelog @ONLY)
if(QS_GZIP)
  add_custom_command(
    OUTPUT ${QS_DEB_CHANGELOG}
    COMMAND ${QS_GZIP} -9nkf ${CMAKE_BINARY_DIR}/packaging/changelog
    DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog
    VERBATIM)
  add_custom_target(quantscope-deb-changelog ALL DEPENDS ${QS_DEB_CHANGELOG})
  foreach(component ${CPACK_COMPONENTS_ALL})
    string(TOUPPER ${component} upper)
    set(doc ${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
    install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright DESTINATION ${doc}
            COMPONENT ${component})
    install(FILES ${QS_DEB_CHANGELOG} DESTINATION ${doc} RENAME changelog.Debian.gz
            COMPONENT ${component})
  endforeach()
endif()

include(CPack)
