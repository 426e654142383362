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

# tessera_test_pch(NAME LIBS ... HEADERS ...): an object library that owns a precompiled header for
# the Qt Test suites of this folder; from here on tessera_add_test reuses it. GCC refuses a
# precompiled header built under a macro that the suite does not define alike (Qt Test's definitions
# name the folder), so it is compiled like the suites: tessera_add_test's definitions, and LIBS the
# libraries that every suite reusing it links. Suites with definitions of their own may reuse it.
function(tessera_test_pch name)
  cmake_parse_arguments(P "" "" "LIBS;HEADERS" ${ARGN})
  set(source "${CMAKE_CURRENT_BINARY_DIR}/${name}.cpp")
  file(CONFIGURE OUTPUT "${source}" CONTENT "// Owns the precompiled header ${name} (tessera_test_pch).\n")
  add_library(${name} OBJECT "${source}")
  target_link_libraries(${name} PRIVATE Qt6::Test ${P_LIBS})
  target_compile_definitions(${name} PRIVATE TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             TESSERA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  target_precompile_headers(${name} PRIVATE ${P_HEADERS})
  set(TESSERA_TEST_PCH ${name} PARENT_SCOPE)
endfunction()

# tessera_add_test(NAME SOURCES... LIBS ... [NO_PCH]): a Qt Test executable registered with CTest,
# reusing the folder's precompiled header (tessera_test_pch) unless NO_PCH (a suite that does not
# link what the header's owner links).
function(tessera_add_test name)
  cmake_parse_arguments(T "NO_PCH" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE Qt6::Test ${T_LIBS})
  set_target_properties(${name} PROPERTIES AUTOMOC ON)
  target_compile_definitions(${name} PRIVATE TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             TESSERA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(TESSERA_TEST_PCH AND NOT T_NO_PCH)
    target_precompile_headers(${name} REUSE_FROM ${TESSERA_TEST_PCH})
    # AUTOMOC's mocs_compilation.cpp is (all but) empty, the suites include their .moc: loading the
    # header would cost it seconds.
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
