// Sample C++ program for `bine-cc rewrite` (tests/rewrite/run.py): MPI collectives called
// from a template, a lambda, a member function, qualified, and through a pointer.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

// Type-dependent arguments: the call names MPI_Allreduce through an unresolved lookup.
template <int N>
void sum_in_place(double (&x)[N]) {
  MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

class Grid {
 public:
  explicit Grid(int rank) : cells_(4, rank) {}
  // Qualified name, count from a std::vector.
  int gather_to(int root, std::vector<int>& out) const {
    return ::MPI_Gather(cells_.data(), static_cast<int>(cells_.size()), MPI_INT, out.data(),
                        static_cast<int>(cells_.size()), MPI_INT, root, MPI_COMM_WORLD);
  }

 private:
  std::vector<int> cells_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string line = "rank " + std::to_string(rank) + ":";

  double x[3] = {rank * 1.0, rank * 2.0, 1.0};
  sum_in_place(x);
  line += " sum " + std::to_string(x[0]) + " " + std::to_string(x[1]) + " " + std::to_string(x[2]);

  std::vector<int> all(static_cast<size_t>(4 * size), -1);
  if (Grid(rank).gather_to(size - 1, all) != MPI_SUCCESS) return 1;
  line += " gather " + std::to_string(all[0]) + " " + std::to_string(all.back());

  auto scatter_one = [&](int root) {
    std::vector<float> src(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) src[static_cast<size_t>(i)] = static_cast<float>(i * i) + 0.5f;
    float mine = 0;
    MPI_Scatter(src.data(), 1, MPI_FLOAT, &mine, 1, MPI_FLOAT, root, MPI_COMM_WORLD);
    return mine;
  };
  line += " scatter " + std::to_string(scatter_one(2));

  std::vector<long long> blocks(static_cast<size_t>(size) * 2);
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = rank + static_cast<long long>(i);
  long long mine[2] = {0, 0};
  MPI_Reduce_scatter_block(blocks.data(), mine, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  line += " rsb " + std::to_string(mine[0]) + " " + std::to_string(mine[1]);

  // Left alone: the address taken, and the call through the pointer.
  auto bcast = &MPI_Bcast;
  int v = rank == 0 ? 9 : 0;
  bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  line += " pointer " + std::to_string(v);

  if (rank == 0) {
    std::printf("%s\n", line.c_str());
    for (int r = 1; r < size; ++r) {
      char buf[1024];
      MPI_Recv(buf, sizeof buf, MPI_CHAR, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      std::printf("%s\n", buf);
    }
  } else {
    MPI_Send(line.c_str(), static_cast<int>(line.size()) + 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
