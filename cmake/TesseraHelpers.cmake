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

# tessera_add_test(NAME SOURCES... LIBS ... [PCH_FROM TARGET]): a Qt Test executable registered with
# CTest. PCH_FROM: reuse TARGET's precompiled header; GCC refuses it unless TARGET was compiled with
# the same definitions (Qt Test's name the folder), so TARGET lives in the suite's folder and links
# the same libraries.
function(tessera_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT;PCH_FROM" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE Qt6::Test ${T_LIBS})
  set_target_properties(${name} PROPERTIES AUTOMOC ON)
  target_compile_definitions(${name} PRIVATE TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             TESSERA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(T_PCH_FROM)
    target_precompile_headers(${name} REUSE_FROM ${T_PCH_FROM})
    # AUTOMOC's mocs_compilation.cpp is all but empty (the suites include their .moc): loading the
    # header would cost it ~10 s.
    set_source_files_properties("${CMAKE_CURRENT_BINARY_DIR}/${name}_autogen/mocs_compilation.cpp"
                                TARGET_DIRECTORY ${name} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
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
