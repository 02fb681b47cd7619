# cmake -DINPUT=<file> -DOUTPUT=<file.cc> -DNAMESPACE=<ns> -DSYMBOL=<name> -P EmbedBytes.cmake
# Writes OUTPUT: a C++ file defining `const unsigned char SYMBOL[]` (INPUT's bytes) and
# `const std::size_t SYMBOL_size` in NAMESPACE. Run at build time by add_custom_command.
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/EmbedBytes.cmake; do not edit.\n"
  "#include <cstddef>\n"
  "namespace ${NAMESPACE} {\n"
  "extern const unsigned char ${SYMBOL}[] = {${bytes}};\n"
  "extern const std::size_t ${SYMBOL}_size = sizeof(${SYMBOL});\n"
  "}  // namespace ${NAMESPACE}\n")
