# The study-file parser and validator (orchestrator/study_*.cpp), paths relative to
# orchestrator/. Included by orchestrator/CMakeLists.txt and tests/orchestrator/.
set(DLSWEEP_STUDY_SOURCES
  study_did_you_mean.cpp
  study_limits.cpp
  study_reader.cpp
  study_space.cpp
  study_spec.cpp
  study_tree.cpp
)
