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

# Backends and transports whose code lands with later issues: the options
# exist so that build scripts can name them, and say plainly what is missing.
function(grain_feature_pending name description issue)
  set(GRAIN_WITH_${name} AUTO CACHE STRING "Build with ${description}: AUTO, ON or OFF")
  set_property(CACHE GRAIN_WITH_${name} PROPERTY STRINGS AUTO ON OFF)
  if(GRAIN_WITH_${name} STREQUAL "ON")
    message(FATAL_ERROR "GRAIN_WITH_${name}=ON, but ${description} is not part of this grain yet "
                        "(${issue}); configure with GRAIN_WITH_${name}=AUTO or OFF")
  endif()
  set(GRAIN_HAVE_${name} OFF PARENT_SCOPE)
endfunction()
