# embed_asset.cmake — turns a text file into a C++ source defining
#   std::string_view dlsweep::report::assets::NAME()
# Run at build time: cmake -DIN=file -DOUT=file.cpp -DNAME=ident [-DSTRIP_URLS=1] -P embed_asset.cmake
# STRIP_URLS removes "http://" and "https://" (Chart.js has them only in comments), so the
# report holds no external URL at all.
file(READ "${IN}" content)
if(STRIP_URLS)
  string(REPLACE "https://" "" content "${content}")
  string(REPLACE "http://" "" content "${content}")
endif()
string(LENGTH "${content}" len)
set(tmp "${OUT}.txt")
file(WRITE "${tmp}" "${content}")
file(READ "${tmp}" hex HEX)
file(REMOVE "${tmp}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
file(WRITE "${OUT}.new"
  "// generated from ${IN} by report/embed_asset.cmake; do not edit\n"
  "#include <string_view>\n"
  "namespace dlsweep::report::assets {\n"
  "namespace { const unsigned char k_${NAME}[] = {\n${hex}0x00}; }\n"
  "std::string_view ${NAME}() { return {reinterpret_cast<const char*>(k_${NAME}), sizeof(k_${NAME}) - 1}; }\n"
  "}\n")
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")
