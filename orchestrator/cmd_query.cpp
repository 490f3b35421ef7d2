// cmd_query.cpp — `dlsweep query SQL`: any read-only statement over the database.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

int cmd_query(const QueryArgs& a) {
  auto o = open_for_reading(a.db, a.format);
  if (!o) return print_error(o.error(), exit_code::usage);
  auto r = o->storage->query(a.sql);
  if (!r) return print_error(r.error(), exit_code::usage);
  fmt::print("{}", render(Rows{r->columns, r->rows}, o->format, output_width(STDOUT_FILENO)));
  return exit_code::ok;
}

}  // namespace dlsweep::orch
