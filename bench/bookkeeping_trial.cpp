// bookkeeping_trial.cpp — the trial program of bench_bookkeeping: no compute, only the
// protocol. Reads params.json's "x", appends R eval records (R = argv[1], default 20) of
// loss = (x - 0.3)^2 + 1/(step + 1) at steps 1..R to metrics.jsonl in one write, and exits
// 0. stdio only, so that its start-up costs as little as a program's can: what the bench
// measures is the orchestrator's bookkeeping, not the trial.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  const int reports = argc > 1 ? std::atoi(argv[1]) : 20;
  char buf[4096];
  double x = 0.5;
  if (std::FILE* p = std::fopen("params.json", "r")) {
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    std::fclose(p);
    if (const char* k = std::strstr(buf, "\"x\":")) x = std::strtod(k + 4, nullptr);
  }
  std::string out;
  char line[256];
  for (int i = 0; i < reports; ++i) {
    const double loss = (x - 0.3) * (x - 0.3) + 1.0 / (i + 2);
    std::snprintf(line, sizeof line,
                  "{\"seq\":%d,\"kind\":\"eval\",\"step\":%d,\"epoch\":%d,\"samples\":%d,\"wall_s\":0,"
                  "\"metrics\":{\"loss\":%.17g}}\n",
                  i, i + 1, i + 1, (i + 1) * 32, loss);
    out += line;
  }
  std::FILE* m = std::fopen("metrics.jsonl", "a");
  if (!m) return 1;
  std::fwrite(out.data(), 1, out.size(), m);
  return std::fclose(m) == 0 ? 0 : 1;
}
