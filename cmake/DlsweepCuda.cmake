# DlsweepCuda.cmake — the optional CUDA build (cuBLASLt, cuDNN 9, NCCL; GPU kernels in
# trainer/kernels/cuda/). -DDLSWEEP_CUDA=ON|OFF; left unset, it is ON exactly when nvcc, the
# CUDA toolkit, cuDNN and NCCL are all found, so a machine without /usr/local/cuda builds
# the CPU-only trainer, unchanged. An explicit ON that cannot be satisfied is an error that
# names what is missing. Result: DLSWEEP_HAVE_CUDA (TRUE/FALSE) and, when TRUE, the CUDA
# language enabled for sm_80 and sm_90 (override with -DCMAKE_CUDA_ARCHITECTURES=...) and
# the imported targets DLSWEEP::cudnn and DLSWEEP::nccl.
set(DLSWEEP_HAVE_CUDA FALSE)
if(DEFINED DLSWEEP_CUDA AND NOT DLSWEEP_CUDA)
  message(STATUS "dlsweep: CUDA off (-DDLSWEEP_CUDA=OFF)")
  return()
endif()
set(_dlsweep_cuda_required FALSE)
if(DEFINED DLSWEEP_CUDA AND DLSWEEP_CUDA)
  set(_dlsweep_cuda_required TRUE)
endif()

# nvcc: $CUDACXX, PATH, or the toolkit's usual place (not always on PATH).
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
set(_dlsweep_cuda_missing "")
if(NOT CMAKE_CUDA_COMPILER)
  list(APPEND _dlsweep_cuda_missing "nvcc (set CUDACXX or put the CUDA toolkit's bin/ on PATH)")
else()
  get_filename_component(_nvcc_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  if(NOT CUDAToolkit_ROOT)
    get_filename_component(CUDAToolkit_ROOT "${_nvcc_bin}" DIRECTORY)
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublasLt)
    list(APPEND _dlsweep_cuda_missing "the CUDA toolkit with cuBLASLt (CUDAToolkit_ROOT)")
  else()
    find_path(DLSWEEP_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDNN_ROOT PATH_SUFFIXES include)
    find_library(DLSWEEP_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ENV CUDNN_ROOT PATH_SUFFIXES lib lib64)
    find_path(DLSWEEP_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_ROOT PATH_SUFFIXES include)
    find_library(DLSWEEP_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_ROOT PATH_SUFFIXES lib lib64)
    if(NOT DLSWEEP_CUDNN_INCLUDE OR NOT DLSWEEP_CUDNN_LIB)
      list(APPEND _dlsweep_cuda_missing "cuDNN 9 (cudnn.h, libcudnn; set CUDNN_ROOT)")
    endif()
    if(NOT DLSWEEP_NCCL_INCLUDE OR NOT DLSWEEP_NCCL_LIB)
      list(APPEND _dlsweep_cuda_missing "NCCL (nccl.h, libnccl; set NCCL_ROOT)")
    endif()
  endif()
endif()

if(_dlsweep_cuda_missing)
  list(JOIN _dlsweep_cuda_missing "; " _missing_text)
  if(_dlsweep_cuda_required)
    message(FATAL_ERROR "dlsweep: -DDLSWEEP_CUDA=ON but not found: ${_missing_text}. "
                        "Install them or configure with -DDLSWEEP_CUDA=OFF.")
  endif()
  message(STATUS "dlsweep: CUDA off (not found: ${_missing_text})")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # A100 (SASS only) and H100 (SASS + PTX, which newer GPUs JIT-compile).
  set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 dialect for nvcc 13
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
add_library(DLSWEEP::cudnn UNKNOWN IMPORTED)
set_target_properties(DLSWEEP::cudnn PROPERTIES IMPORTED_LOCATION ${DLSWEEP_CUDNN_LIB}
                      INTERFACE_INCLUDE_DIRECTORIES ${DLSWEEP_CUDNN_INCLUDE})
add_library(DLSWEEP::nccl UNKNOWN IMPORTED)
set_target_properties(DLSWEEP::nccl PROPERTIES IMPORTED_LOCATION ${DLSWEEP_NCCL_LIB}
                      INTERFACE_INCLUDE_DIRECTORIES ${DLSWEEP_NCCL_INCLUDE})
set(DLSWEEP_HAVE_CUDA TRUE)
message(STATUS "dlsweep: CUDA on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, "
               "cuDNN ${DLSWEEP_CUDNN_LIB}, NCCL ${DLSWEEP_NCCL_LIB})")
