# Regression replay of the fuzz targets in the regular (GCC, unsanitized) build: each target is
# linked with ReplayMain.cpp instead of libFuzzer and ctest feeds it its seed corpus and
# fuzz/regressions/<target>/ (see ReplayMain.cpp). Included from the top level when tests are on
# and the libFuzzer build is off.
set(QS_FUZZ_SRC ${PROJECT_SOURCE_DIR}/fuzz)
find_package(Python3 COMPONENTS Interpreter)
set(QS_REPLAY_CORPUS ${CMAKE_BINARY_DIR}/fuzz-corpus)
add_custom_command(
  OUTPUT ${QS_REPLAY_CORPUS}/stamp
  COMMAND ${Python3_EXECUTABLE} ${QS_FUZZ_SRC}/make_corpus.py ${QS_REPLAY_CORPUS} ${QS_SHARED_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${QS_REPLAY_CORPUS}/stamp
  DEPENDS ${QS_FUZZ_SRC}/make_corpus.py ${QS_FUZZ_SRC}/more_seeds.py ${QS_FUZZ_SRC}/gguf_seeds.py
          ${QS_FUZZ_SRC}/quark_seeds.py
  COMMENT "Writing fuzz seed corpora for the replay tests")
add_custom_target(qs_replay_corpus ALL DEPENDS ${QS_REPLAY_CORPUS}/stamp)
file(GLOB QS_FUZZ_TARGET_SOURCES ${QS_FUZZ_SRC}/fuzz_*.cpp)
foreach(src ${QS_FUZZ_TARGET_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" short ${name})
  add_executable(replay_${short} ${src} ${QS_FUZZ_SRC}/ReplayMain.cpp)
  target_include_directories(replay_${short} PRIVATE ${QS_FUZZ_SRC})
  target_link_libraries(replay_${short} PRIVATE quantscope_core)
  target_compile_definitions(replay_${short} PRIVATE QT_NO_KEYWORDS)
  target_precompile_headers(replay_${short} REUSE_FROM quantscope_core)
  set_target_properties(replay_${short} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  set(inputs ${QS_REPLAY_CORPUS}/${short})
  if(EXISTS ${QS_FUZZ_SRC}/regressions/${name})
    list(APPEND inputs ${QS_FUZZ_SRC}/regressions/${name})
  endif()
  add_test(NAME fuzz_replay_${short} COMMAND replay_${short} ${inputs})
  set_tests_properties(fuzz_replay_${short} PROPERTIES TIMEOUT 600)
endforeach()
