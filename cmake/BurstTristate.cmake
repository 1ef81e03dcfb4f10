# burst_tristate(NAME DOC): a cache option NAME that is AUTO (the default), ON or OFF, read
# case-insensitively into the upper-case variable _NAME (a wrong value stops the configure).
function(burst_tristate name doc)
  set(${name} AUTO CACHE STRING "${doc}: AUTO, ON or OFF")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${name}}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name} must be AUTO, ON or OFF, got '${${name}}'")
  endif()
  set(_${name} "${value}" PARENT_SCOPE)
endfunction()
