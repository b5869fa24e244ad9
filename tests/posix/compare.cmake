# SPDX-License-Identifier: Apache-2.0
# Runs program A and program B (B optionally with LD_PRELOAD=PRELOAD_B), both
# with ARGS; fails unless both exit with 0 and print the same stdout. EMULATOR
# (a cross build's qemu-user command line) runs both; qemu passes LD_PRELOAD on
# to the emulated program's loader.
separate_arguments(args UNIX_COMMAND "${ARGS}")
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
# NPTL's run is the reference, and a loaded machine can make it fail a
# program's own timing check (blocking_calls judges overlap by the clock: CI
# saw NPTL's two mq waits take 4.8 waits' time). It gets up to three tries.
# ito's run gets TRIES (default 1): a program whose only verdict that
# depends on the clock is its own (blocking_calls) is given 3, since a call
# that really holds a worker serialises its waits on every try, and a
# machine busy for a moment does not.
if(NOT TRIES)
  set(TRIES 1)
endif()
foreach(try 1 2 3)
  execute_process(COMMAND ${emulator} ${A} ${args} RESULT_VARIABLE rc_a OUTPUT_VARIABLE out_a ERROR_VARIABLE err_a)
  if(rc_a EQUAL 0)
    break()
  endif()
  message("--- NPTL (${A}) exit ${rc_a} on try ${try}:\n${out_a}${err_a}")
endforeach()
foreach(try RANGE 1 ${TRIES})
  if(PRELOAD_B)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${PRELOAD_B} ${emulator} ${B} ${args}
                    RESULT_VARIABLE rc_b OUTPUT_VARIABLE out_b ERROR_VARIABLE err_b)
  else()
    execute_process(COMMAND ${emulator} ${B} ${args} RESULT_VARIABLE rc_b OUTPUT_VARIABLE out_b ERROR_VARIABLE err_b)
  endif()
  if(rc_b EQUAL 0 OR try EQUAL TRIES)
    break()
  endif()
  message("--- ito (${B} ${PRELOAD_B}) exit ${rc_b} on try ${try}:\n${out_b}${err_b}")
endforeach()
message("--- NPTL (${A}) exit ${rc_a}:\n${out_a}${err_a}")
message("--- ito (${B} ${PRELOAD_B}) exit ${rc_b}:\n${out_b}${err_b}")
if(NOT rc_a EQUAL 0 OR NOT rc_b EQUAL 0)
  message(FATAL_ERROR "a run failed: NPTL ${rc_a}, ito ${rc_b}")
endif()
if(NOT out_a STREQUAL out_b)
  message(FATAL_ERROR "outputs differ")
endif()
