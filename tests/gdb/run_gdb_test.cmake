# SPDX-License-Identifier: Apache-2.0
# Runs the deadlocked program under gdb -batch with ito's helper and checks that
# `info ito-ults` lists the three blocked ULTs and what they wait on, and that
# `ito-ult bt` walks a blocked ULT's stack from its switch to its entry.
execute_process(
  COMMAND ${GDB} -nx -batch -ex "set debuginfod enabled off" -ex run
          -ex "source ${HELPER}" -ex "info ito-ults" -ex "ito-ult bt 1024" ${PROGRAM}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
set(all "${out}\n${err}")
foreach(want
    "ito: 2 workers, 4 live ULTs"
    "ULT 1024 +blocked in mutex on 0x"
    "ULT 2048 +blocked in mutex on 0x"
    "ULT 3072 +blocked in condition_variable on 0x"
    "ULT 0 +running on worker 0"
    "ito: ULT 1024, blocked in mutex"
    "ito::mutex::lock"
    "ito_context_(start|trampoline)")
  if(NOT all MATCHES "${want}")
    message(FATAL_ERROR "gdb test: no match for '${want}' in:\n${all}")
  endif()
endforeach()
# The objects named are the program's own mutexes and condition variable.
string(REGEX MATCH "deadlock: mutexes (0x[0-9a-f]+) (0x[0-9a-f]+), condition variable (0x[0-9a-f]+)" _ "${all}")
set(objects ${CMAKE_MATCH_1} ${CMAKE_MATCH_2} ${CMAKE_MATCH_3})  # MATCHES below resets CMAKE_MATCH_*
list(LENGTH objects n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "gdb test: the program did not print its objects:\n${all}")
endif()
foreach(object ${objects})
  if(NOT all MATCHES "on ${object} ")
    message(FATAL_ERROR "gdb test: object ${object} not listed in:\n${all}")
  endif()
endforeach()
message(STATUS "gdb test: ok")
