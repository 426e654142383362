# Helpers shared by every folder: embedding resource files into a library, registering Qt Test suites.

# tessera_embed_files(OUT_CPP NAMESPACE_FN FILES...): writes a .cpp defining
#   std::vector<std::pair<std::string_view, std::string_view>> FN()  (file name, contents)
# regenerated whenever one of the files changes.
function(tessera_embed_files out_cpp function_name)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT "${out_cpp}"
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cpp} -DFN=${function_name} "-DFILES=${files}"
            -P "${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake"
    DEPENDS ${files} "${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake"
    COMMENT "Embedding ${function_name}"
    VERBATIM)
endfunction()

# tessera_add_test(NAME SOURCES... LIBS ...): a Qt Test executable registered with CTest.
function(tessera_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE Qt6::Test ${T_LIBS})
  set_target_properties(${name} PROPERTIES AUTOMOC ON)
  target_compile_definitions(${name} PRIVATE TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             TESSERA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT}
                       ENVIRONMENT "QT_QPA_PLATFORM=offscreen")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
