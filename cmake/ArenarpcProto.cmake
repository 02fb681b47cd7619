# arenarpc_add_proto(<target> [STATIC | SHARED] PROTOS a.proto... [IMPORT_DIRS dir...]
#                    [GRPC] [LINK target...])
# Generates C++ for the given .proto files with protoc (and, with GRPC, gRPC's C++ plugin) and
# builds it as a library <target> that links protobuf (and gRPC::grpc++ with GRPC) and the LINK
# targets (e.g. the library of a .proto this one imports).
#   STATIC / SHARED   library type; default: static unless BUILD_SHARED_LIBS is on.
#   IMPORT_DIRS       protoc's -I directories; default: the current source directory. Every
#                     .proto must lie under the first one.
# Output lands in ${CMAKE_CURRENT_BINARY_DIR}/gen, which is on the target's include path, so
# `#include "<path of the .proto relative to the first import dir without .proto>.pb.h"` works.
# Needs find_package(Protobuf) (and find_package(gRPC CONFIG) for GRPC) done before; the arenarpc
# package does both.
function(arenarpc_add_proto target)
  cmake_parse_arguments(P "GRPC;STATIC;SHARED" "" "PROTOS;IMPORT_DIRS;LINK" ${ARGN})
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "arenarpc_add_proto(${target}): unknown arguments ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT P_PROTOS)
    message(FATAL_ERROR "arenarpc_add_proto(${target}): no PROTOS")
  endif()
  set(type)
  if(P_STATIC)
    set(type STATIC)
  elseif(P_SHARED)
    set(type SHARED)
  endif()
  if(NOT P_IMPORT_DIRS)
    set(P_IMPORT_DIRS ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  list(GET P_IMPORT_DIRS 0 root)
  set(import_args)
  foreach(d ${P_IMPORT_DIRS})
    list(APPEND import_args -I${d})
  endforeach()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${out_dir})
  set(srcs)
  set(hdrs)
  foreach(proto ${P_PROTOS})
    get_filename_component(abs ${proto} ABSOLUTE)
    if(NOT EXISTS ${abs})
      message(FATAL_ERROR "arenarpc_add_proto(${target}): ${abs} does not exist")
    endif()
    file(RELATIVE_PATH rel ${root} ${abs})
    if(rel MATCHES "^\\.\\./")
      message(FATAL_ERROR "arenarpc_add_proto(${target}): ${abs} is not under the first "
                          "IMPORT_DIRS entry ${root}")
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem ${rel})
    set(outs ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.pb.h)
    set(cmd_args --cpp_out=${out_dir})
    if(P_GRPC)
      list(APPEND outs ${out_dir}/${stem}.grpc.pb.cc ${out_dir}/${stem}.grpc.pb.h)
      list(APPEND cmd_args --grpc_out=${out_dir} --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>)
    endif()
    add_custom_command(
      OUTPUT ${outs}
      COMMAND protobuf::protoc ${cmd_args} ${import_args} ${abs}
      DEPENDS ${abs} protobuf::protoc
      COMMENT "protoc ${rel}")
    foreach(o ${outs})
      if(o MATCHES "\\.cc$")
        list(APPEND srcs ${o})
      else()
        list(APPEND hdrs ${o})
      endif()
    endforeach()
  endforeach()
  add_library(${target} ${type} ${srcs} ${hdrs})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${out_dir}>)
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf ${P_LINK})
  if(P_GRPC)
    target_link_libraries(${target} PUBLIC gRPC::grpc++)
  endif()
  target_compile_options(${target} PRIVATE -w)
endfunction()
