# bine_add_schedules(): generated collectives as part of a user's build (docs/cmake.md).
#
#   bine_add_schedules(TARGET app
#                      FILES a.bine [b.bine ...]        .bine sources (relative: to the
#                                                       current source directory)
#                      [SCHEDULES s1 s2 ...]            only these schedules (default: all)
#                      [VERIFY_RANKS 1..64]             p range proved before emitting (default 1..32)
#                      [TARGETS mpi]                    code generators (default mpi)
#                      [PREFIX bcc_]                    prefix of the generated C names
#                      [DISPATCH table.json]            selection table: also a dispatcher
#                                                       <PREFIX><collective> per collective of it
#                                                       (bine-cc compile --dispatch; mpi and utofu)
#                      [HEADER name.h])                 header name (default <TARGET>_bine.h;
#                                                       another target than mpi: <stem>_<target>.h)
#
# At build time `bine-cc compile` verifies every selected schedule for VERIFY_RANKS (every
# root) and writes the header into ${CMAKE_CURRENT_BINARY_DIR}/bine_generated/<TARGET>/,
# which is added to the target's include path; a schedule that fails verification fails the
# build with bine-cc's diagnostic (file:line:col, the counterexample's rank, round and block)
# and leaves no header behind. The target links bine_cc::runtime (one C++ translation unit
# of the target must #define BINE_IMPLEMENTATION before including the header). A test
# `bine_check_<TARGET>` re-runs `bine-cc check` over the same files and range (it runs where
# the project enabled testing: enable_testing() or include(CTest)).
function(bine_add_schedules)
  cmake_parse_arguments(B "" "TARGET;VERIFY_RANKS;PREFIX;HEADER;DISPATCH" "FILES;SCHEDULES;TARGETS" ${ARGN})
  if(NOT B_TARGET OR NOT TARGET ${B_TARGET})
    message(FATAL_ERROR "bine_add_schedules: TARGET must name an existing target (got '${B_TARGET}')")
  endif()
  if(NOT B_FILES)
    message(FATAL_ERROR "bine_add_schedules(${B_TARGET}): FILES is empty")
  endif()
  if(B_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bine_add_schedules(${B_TARGET}): unknown arguments: ${B_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT B_VERIFY_RANKS)
    set(B_VERIFY_RANKS 1..32)
  endif()
  if(NOT B_VERIFY_RANKS MATCHES "^[0-9]+\\.\\.[0-9]+$")
    message(FATAL_ERROR "bine_add_schedules(${B_TARGET}): VERIFY_RANKS must be A..B, got '${B_VERIFY_RANKS}'")
  endif()
  if(NOT B_TARGETS)
    set(B_TARGETS mpi)
  endif()
  if(NOT B_HEADER)
    set(B_HEADER ${B_TARGET}_bine.h)
  endif()
  set(files "")
  foreach(f IN LISTS B_FILES)
    get_filename_component(abs "${f}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${abs}")
      message(FATAL_ERROR "bine_add_schedules(${B_TARGET}): no such file: ${f}")
    endif()
    list(APPEND files "${abs}")
  endforeach()
  set(only "")
  foreach(s IN LISTS B_SCHEDULES)
    list(APPEND only --schedule ${s})
  endforeach()
  set(prefix "")
  if(DEFINED B_PREFIX)
    set(prefix --prefix "${B_PREFIX}")
  endif()
  set(dispatch "")
  set(table "")
  if(B_DISPATCH)
    get_filename_component(table "${B_DISPATCH}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${table}")
      message(FATAL_ERROR "bine_add_schedules(${B_TARGET}): no such selection table: ${B_DISPATCH}")
    endif()
    set(dispatch --dispatch "${table}")
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/bine_generated/${B_TARGET}")
  set(outputs "")
  foreach(t IN LISTS B_TARGETS)
    if(t STREQUAL "mpi")
      set(out "${dir}/${B_HEADER}")
    else()
      get_filename_component(stem "${B_HEADER}" NAME_WE)
      set(out "${dir}/${stem}_${t}.h")
    endif()
    add_custom_command(OUTPUT "${out}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
      COMMAND bine_cc::bine-cc compile ${files} ${only} --target ${t} --verify-ranks ${B_VERIFY_RANKS} ${prefix} ${dispatch}
              -o "${out}"
      DEPENDS ${files} ${table}
      COMMENT "bine-cc: verifying (p = ${B_VERIFY_RANKS}) and compiling schedules for ${B_TARGET} (target ${t})"
      VERBATIM)
    list(APPEND outputs "${out}")
  endforeach()
  add_custom_target(${B_TARGET}_bine_schedules DEPENDS ${outputs})
  add_dependencies(${B_TARGET} ${B_TARGET}_bine_schedules)
  target_include_directories(${B_TARGET} PRIVATE "${dir}")
  target_link_libraries(${B_TARGET} PRIVATE bine_cc::runtime)
  # Registered always; it runs where the project enabled testing.
  add_test(NAME bine_check_${B_TARGET} COMMAND bine_cc::bine-cc check ${files} ${only} --ranks ${B_VERIFY_RANKS} --quiet)
endfunction()
