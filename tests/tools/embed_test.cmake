# embed_test.cmake — CTest's check that a host application builds against an
# installed tycho and runs (cmake -P; tests/CMakeLists.txt passes BUILD, SRC,
# WORK, CC, SANITIZE):
#   1. cmake --install BUILD into WORK/prefix;
#   2. examples/embed configured with find_package(tycho) (CMAKE_PREFIX_PATH),
#      built, and run on its script;
#   3. the same sources compiled with `pkg-config --cflags --libs tycho`, run;
#   4. the installed module: `lua5.4 -e 'require "tycho"'` (not when
#      sanitized: lua5.4 would need the sanitizer runtime preloaded).
# Each host run must print its "ok" line and exit 0.
cmake_minimum_required(VERSION 3.20)

foreach(v BUILD SRC WORK CC)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "embed_test.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_out "${out}${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run("install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
file(GLOB_RECURSE config ${prefix}/*/tychoConfig.cmake)
file(GLOB_RECURSE pcfile ${prefix}/*/tycho.pc)
if(NOT config OR NOT pcfile)
  message(FATAL_ERROR "the install has no tychoConfig.cmake or tycho.pc")
endif()
# every public header of the source tree is installed
file(GLOB public RELATIVE ${SRC}/runtime/include/tycho ${SRC}/runtime/include/tycho/*.h)
foreach(h ${public})
  file(GLOB_RECURSE found ${prefix}/*/tycho/${h})
  if(NOT found)
    message(FATAL_ERROR "the install lacks the public header tycho/${h}")
  endif()
endforeach()

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
# samples per element: enough to check the estimate, quick in any build
set(samples 3000)

# 2. find_package(tycho)
run("configure examples/embed" ${CMAKE_COMMAND} -S ${SRC}/examples/embed -B ${WORK}/build
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${CC} "-DCMAKE_C_FLAGS=${flags}")
run("build examples/embed" ${CMAKE_COMMAND} --build ${WORK}/build)
run("embed_host (find_package)" ${WORK}/build/embed_host ${SRC}/examples/embed/script.lua ${samples})
message(STATUS "${run_out}")
if(NOT run_out MATCHES "embed_host: result read back, max error [^\n]*: ok")
  message(FATAL_ERROR "embed_host did not check its result:\n${run_out}")
endif()

# 3. pkg-config
get_filename_component(pcdir ${pcfile} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pcdir})
run("pkg-config" pkg-config --cflags --libs tycho)
string(STRIP "${run_out}" pc)
separate_arguments(pc UNIX_COMMAND "${pc}")
separate_arguments(sflags UNIX_COMMAND "${flags}")
run("compile with pkg-config" ${CC} ${sflags} -o ${WORK}/embed_host_pc
    ${SRC}/examples/embed/main.c ${SRC}/examples/embed/mc_task.c ${pc})
run("embed_host (pkg-config)" ${WORK}/embed_host_pc ${SRC}/examples/embed/script.lua ${samples})
if(NOT run_out MATCHES ": ok")
  message(FATAL_ERROR "embed_host_pc did not check its result:\n${run_out}")
endif()

# 4. the installed Lua module
find_program(LUA54 lua5.4)
if(LUA54 AND NOT SANITIZE)
  file(GLOB_RECURSE module ${prefix}/*/lua/5.4/tycho.so)
  get_filename_component(moddir "${module}" DIRECTORY)
  set(ENV{LUA_CPATH} "${moddir}/?.so")
  run("require tycho" ${LUA54} -e
      "local t = require 'tycho' print('sum', t.sum(t.arange(5)):item())")
  if(NOT run_out MATCHES "sum\t10")
    message(FATAL_ERROR "the installed module did not work:\n${run_out}")
  endif()
endif()
message(STATUS "embed test: ok")
