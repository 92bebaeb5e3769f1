# SPDX-License-Identifier: BSD-3-Clause
# grain_embed_source(<target> <source> <symbol>): compiles <source> (a device
# source, with grain's headers inlined) into <target> as `const char <symbol>[]`,
# which grain_program_create takes.  GRAIN_EMBED_INCLUDE_DIR names the
# directory that holds grain/device.h and GRAIN_EMBED_TOOL the grain_embed
# executable: grain's own build sets them (globally, so that a project that
# adds grain with add_subdirectory may call this too), and so does the
# installed package (grainConfig.cmake), for the installed headers and tool.
# In grain's own build every source is also checked as CUDA, HIP and OpenCL C
# (grain_device_check); a consumer's is not.
function(grain_embed_source target source symbol)
  get_filename_component(abs "${source}" ABSOLUTE)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.c")
  file(GLOB_RECURSE grain_device_headers "${GRAIN_EMBED_INCLUDE_DIR}/grain/*.h")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${GRAIN_EMBED_TOOL} "${GRAIN_EMBED_INCLUDE_DIR}" "${abs}" ${symbol} "${out}"
    DEPENDS ${GRAIN_EMBED_TOOL} "${abs}" ${grain_device_headers}
    COMMENT "Embedding ${source}")
  target_sources(${target} PRIVATE "${out}")
  if(COMMAND grain_device_check)
    grain_device_check("${abs}" ${symbol})
  endif()
endfunction()

if(NOT GRAIN_EMBED_CHECKS)
  return()
endif()

# Compiles a device source as CUDA (nvcc) and HIP (hipcc) for the check
# architectures, in every reservation mode, so that a dialect error fails the
# build on a machine without a GPU; with in-place apply and the direct path,
# the larger send path, and the heap's atomics at both scopes (device in
# reservation mode 0, system in the others).  Device code only, as far as
# the target's assembly (PTX, AMDGPU): the front end and the device
# compiler see all a dialect error can be, and the host side's compile and
# ptxas, which see none, took most of each check's time (CUDA 2.3 s against
# 0.85, HIP 2.6 against 1.75, on a 2-core machine that runs 81 of each).
# Without the optimizer (NVVM and the AMDGPU back end at -O0), for the same
# reason: it finds no dialect error, and it took most of what was left
# (tests/integration/fetch.cl: CUDA 3.2 s against 1.2, HIP 7.0 against 1.9).
# Where clang is, also as OpenCL C 2.0 and 3.0 for SPIR with the launch
# agent's device-side enqueue, which PoCL, the OpenCL the tests run on,
# never compiles (it has no device-side enqueue).
# GRAIN_DEVICE_CHECK_MODES (default 0 1 2), set in a directory, narrows the
# reservation modes its sources are checked in: the modes change only the
# insides of grain's device calls, which the runtime's and the tests'
# sources check in every mode.
function(grain_device_check abs symbol)
  # Once per source, however many targets embed it.
  string(MD5 key "${abs}")
  get_property(checked GLOBAL PROPERTY GRAIN_DEVICE_CHECKED_${key})
  if(checked)
    return()
  endif()
  set_property(GLOBAL PROPERTY GRAIN_DEVICE_CHECKED_${key} TRUE)
  get_filename_component(dir "${abs}" DIRECTORY)
  set(common_flags -I${GRAIN_EMBED_INCLUDE_DIR} -I${dir} -DGRAIN_MAX_WG=256 -DGRAIN_SG_WIDTH=32
      -DGRAIN_APPLY_IN_PLACE=1 -DGRAIN_PEER_DIRECT=1)
  # As the CUDA backend builds where it links the device runtime: with
  # kernels that launch kernels.
  set(cuda_flags)
  if(GRAIN_NVJITLINK AND GRAIN_CUDADEVRT)
    set(cuda_flags -rdc=true -DGRAIN_DEVICE_LAUNCH=1)
  endif()
  set(modes 0 1 2)
  if(DEFINED GRAIN_DEVICE_CHECK_MODES)
    set(modes ${GRAIN_DEVICE_CHECK_MODES})
  endif()
  set(stamps)
  foreach(mode IN LISTS modes)
    if(mode EQUAL 0)
      set(flags ${common_flags} -DGRAIN_HEAP_SCOPE_SYSTEM=0)
    else()
      set(flags ${common_flags} -DGRAIN_HEAP_SCOPE_SYSTEM=1)
    endif()
    if(GRAIN_HAVE_CUDA)
      set(o "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.cuda${mode}.ptx")
      add_custom_command(OUTPUT "${o}"
        COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -x cu -arch=${GRAIN_CUDA_CHECK_ARCH} ${flags} ${cuda_flags}
                -DGRAIN_RESERVE=${mode} -Xcicc -O0 -ptx "${abs}" -o "${o}"
        DEPENDS "${abs}" ${grain_device_headers}
        COMMENT "Checking ${symbol} as CUDA for ${GRAIN_CUDA_CHECK_ARCH} (reserve ${mode})")
      list(APPEND stamps "${o}")
    endif()
    if(GRAIN_HAVE_HIP)
      # hipcc leaves two empty folders in $TMPDIR a run: its own, removed after it.
      set(o "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.hip${mode}.o")
      set(tmp "${o}.tmp")
      add_custom_command(OUTPUT "${o}"
        COMMAND ${CMAKE_COMMAND} -E make_directory "${tmp}"
        COMMAND ${CMAKE_COMMAND} -E env "TMPDIR=${tmp}" ${GRAIN_HIPCC} -x hip --offload-arch=${GRAIN_HIP_CHECK_ARCH}
                --offload-device-only -O0 ${flags} -DGRAIN_RESERVE=${mode} -c "${abs}" -o "${o}"
        COMMAND ${CMAKE_COMMAND} -E rm -rf "${tmp}"
        DEPENDS "${abs}" ${grain_device_headers}
        COMMENT "Checking ${symbol} as HIP for ${GRAIN_HIP_CHECK_ARCH} (reserve ${mode})")
      list(APPEND stamps "${o}")
    endif()
    if(GRAIN_HAVE_OPENCL AND GRAIN_CLANG)
      foreach(std CL2.0 CL3.0)
        set(o "${CMAKE_CURRENT_BINARY_DIR}/${symbol}.${std}.${mode}.bc")
        add_custom_command(OUTPUT "${o}"
          COMMAND ${GRAIN_CLANG} -x cl -cl-std=${std} -Xclang -finclude-default-header --target=spir64 ${flags}
                  -DGRAIN_DEVICE_LAUNCH=1 -DGRAIN_RESERVE=${mode} -c -emit-llvm "${abs}" -o "${o}"
          DEPENDS "${abs}" ${grain_device_headers}
          COMMENT "Checking ${symbol} as OpenCL C ${std} with device-side enqueue (reserve ${mode})")
        list(APPEND stamps "${o}")
      endforeach()
    endif()
  endforeach()
  if(stamps)
    add_custom_target(${symbol}_device_check ALL DEPENDS ${stamps})
  endif()
endfunction()
