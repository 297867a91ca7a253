// bine/utofu_runtime.hpp: the runtime of the utofu target (docs/utofu.md). Generated code
// is the MPI target's (the MPI collectives' signatures, the shared round pipeline of
// bine/rounds.hpp driven by bine::mpi::BasicContext); its Context moves data through
// bine::utofu::UtofuTransport (uTofu puts) instead of MPI point-to-point. Include it in
// place of bine/mpi_runtime.hpp, in a program that does not also include the MPI target's
// implementation (one Context per program).
#pragma once
#include "bine/utofu_transport.hpp"

#define BINE_MPI_TRANSPORT ::bine::utofu::UtofuTransport
#include "bine/mpi_runtime.hpp"
