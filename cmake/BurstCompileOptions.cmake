# Warnings for burst's own targets, and the sanitizer build.
add_library(burst_compile_options INTERFACE)
target_compile_options(burst_compile_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                       -Wnon-virtual-dtor)
# A new warning in burst's own code fails the build (and so CI); third-party headers come in
# as system includes and are not ours to fix. -DBURST_WERROR=OFF builds anyway.
option(BURST_WERROR "Treat warnings in burst's own targets as errors" ON)
if(BURST_WERROR)
  target_compile_options(burst_compile_options INTERFACE -Werror)
endif()
if(BURST_SANITIZE)
  set(_burst_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=undefined
                        -fno-omit-frame-pointer)
  # -O1 keeps sanitizer builds quick to compile and run while keeping useful stack traces.
  target_compile_options(burst_compile_options INTERFACE ${_burst_sanitizers} -O1)
  target_link_options(burst_compile_options INTERFACE ${_burst_sanitizers})
endif()

# burst_add_test(NAME SOURCES... LIBS ...): one GoogleTest executable registered with ctest.
function(burst_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest_main burst_compile_options)
  if(ARG_LABELS)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
