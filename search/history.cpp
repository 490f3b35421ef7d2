// history.cpp — the pruning axes by name.
#include "search/history.hpp"

namespace dlsweep::search {

double position(const CurvePoint& p, Axis axis) {
  switch (axis) {
    case Axis::epoch: return p.epoch;
    case Axis::step: return p.step;
    case Axis::samples: return p.samples;
    case Axis::wall_s: return p.wall_s;
  }
  return p.epoch;
}

std::optional<Axis> parse_axis(std::string_view word) {
  if (word == "epoch") return Axis::epoch;
  if (word == "step") return Axis::step;
  if (word == "samples") return Axis::samples;
  if (word == "wall_s") return Axis::wall_s;
  return std::nullopt;
}

std::string_view axis_name(Axis axis) {
  switch (axis) {
    case Axis::epoch: return "epoch";
    case Axis::step: return "step";
    case Axis::samples: return "samples";
    case Axis::wall_s: return "wall_s";
  }
  return "epoch";
}

}  // namespace dlsweep::search
