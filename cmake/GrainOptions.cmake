# SPDX-License-Identifier: BSD-3-Clause
# GRAIN_WITH_<X> is AUTO (on when found), ON (a configure error when not found) or OFF.
function(grain_feature name found description hint)
  set(GRAIN_WITH_${name} AUTO CACHE STRING "Build with ${description}: AUTO, ON or OFF")
  set_property(CACHE GRAIN_WITH_${name} PROPERTY STRINGS AUTO ON OFF)
  set(value "${GRAIN_WITH_${name}}")
  if(value STREQUAL "OFF")
    set(GRAIN_HAVE_${name} OFF PARENT_SCOPE)
  elseif(found)
    set(GRAIN_HAVE_${name} ON PARENT_SCOPE)
  elseif(value STREQUAL "ON")
    message(FATAL_ERROR "GRAIN_WITH_${name}=ON, but ${description} was not found: ${hint}")
  else()
    set(GRAIN_HAVE_${name} OFF PARENT_SCOPE)
  endif()
endfunction()

