#include "trainer/comm/mpi_communicator.hpp"

#include <climits>

#include <fmt/format.h>

namespace dlsweep::trainer::comm {

namespace {

Status check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return {};
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return fail(fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(len))), "comm/mpi",
              "a rank died or the transport failed; see the other ranks' stderr");
}

Status check_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    return fail(fmt::format("a collective of {} elements exceeds MPI's int count", n), "comm/mpi",
                "split the buffer (internal error)");
  return {};
}

}  // namespace

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (auto s = check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread"); !s)
      return std::unexpected(s.error());
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(MPI_COMM_WORLD, true, rank, size));
}

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::split(int color, int key) {
  MPI_Comm sub = MPI_COMM_NULL;
  if (auto s = check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split"); !s) return std::unexpected(s.error());
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(sub, &rank);
  MPI_Comm_size(sub, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(sub, false, rank, size));
}

MpiCommunicator::~MpiCommunicator() {
  if (!pending_.empty()) MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (!world_) MPI_Comm_free(&comm_);
  else MPI_Finalize();
}

Status MpiCommunicator::allreduce_sum(std::span<float> data) {
  if (auto s = check_count(data.size()); !s) return s;
  return check(MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                             comm_),
               "MPI_Allreduce");
}

Status MpiCommunicator::allreduce_sum(std::span<double> data) {
  if (auto s = check_count(data.size()); !s) return s;
  return check(MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_DOUBLE, MPI_SUM,
                             comm_),
               "MPI_Allreduce");
}

Status MpiCommunicator::broadcast(std::span<float> data, int root) {
  if (auto s = check_count(data.size()); !s) return s;
  return check(MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_FLOAT, root, comm_), "MPI_Bcast");
}

Status MpiCommunicator::broadcast(std::span<double> data, int root) {
  if (auto s = check_count(data.size()); !s) return s;
  return check(MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_DOUBLE, root, comm_), "MPI_Bcast");
}

Status MpiCommunicator::barrier() { return check(MPI_Barrier(comm_), "MPI_Barrier"); }

Status MpiCommunicator::start_allreduce_sum(std::span<float> data) {
  if (auto s = check_count(data.size()); !s) return s;
  MPI_Request req = MPI_REQUEST_NULL;
  if (auto s = check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM,
                                    comm_, &req),
                     "MPI_Iallreduce");
      !s)
    return s;
  pending_.push_back(req);
  return {};
}

void MpiCommunicator::progress() {
  if (pending_.empty()) return;
  int done = 0;
  MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE);
  if (done) pending_.clear();
}

Status MpiCommunicator::wait_all() {
  if (pending_.empty()) return {};
  const int rc = MPI_Waitall(static_cast<int>(pending_.size()), pending_.data(), MPI_STATUSES_IGNORE);
  pending_.clear();
  return check(rc, "MPI_Waitall");
}

}  // namespace dlsweep::trainer::comm
