# grain_embed_source(<target> <source> <symbol>): compiles <source> (a device
# source with grain's headers inlined) into <target> as `const char <symbol>[]`.
function(grain_embed_source target source symbol)
  get_filename_component(abs "${source}" ABSOLUTE)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.c")
  file(GLOB_RECURSE grain_device_headers "${PROJECT_SOURCE_DIR}/include/grain/*.h")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND grain_embed "${PROJECT_SOURCE_DIR}/include" "${abs}" ${symbol} "${out}"
    DEPENDS grain_embed "${abs}" ${grain_device_headers}
    COMMENT "Embedding ${source}")
  target_sources(${target} PRIVATE "${out}")
endfunction()
