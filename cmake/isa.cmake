# The instruction-set levels of the CPU kernels, read from their one table
# (runtime/src/core/isa.h: X(level, "flags", lanes, check), one level per line).
# Sets TYCHO_ISA_LEVELS (names, lowest first) and TYCHO_ISA_FLAGS_<level>
# (a list of compiler options).
# (file(READ), not file(STRINGS): the rows end in '\', which would escape
# the list separator)
file(READ ${PROJECT_SOURCE_DIR}/runtime/src/core/isa.h _tycho_isa_text)
string(REGEX MATCHALL "\n  X\\([a-z0-9]+, \"[^\"]*\"" _tycho_isa_rows "${_tycho_isa_text}")
set(TYCHO_ISA_LEVELS "")
foreach(_row IN LISTS _tycho_isa_rows)
  if(NOT _row MATCHES "^\n  X\\(([a-z0-9]+), \"([^\"]*)\"")
    message(FATAL_ERROR "runtime/src/core/isa.h: cannot read the level row '${_row}'")
  endif()
  list(APPEND TYCHO_ISA_LEVELS ${CMAKE_MATCH_1})
  separate_arguments(TYCHO_ISA_FLAGS_${CMAKE_MATCH_1} UNIX_COMMAND "${CMAKE_MATCH_2}")
endforeach()
if(NOT TYCHO_ISA_LEVELS)
  message(FATAL_ERROR "runtime/src/core/isa.h: no instruction-set levels found")
endif()
list(GET TYCHO_ISA_LEVELS 0 TYCHO_ISA_BASELINE)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/runtime/src/core/isa.h)
