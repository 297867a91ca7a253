// The Fortran bindings of libbine_pmpi.so (docs/pmpi.md, "Fortran"). Open MPI's `mpif.h` and
// `use mpi` bindings (libmpi_mpifh) call the PMPI_ C functions directly, so the C
// interception alone never sees a Fortran program's collectives. These definitions take
// the gfortran symbols (lower case, one trailing underscore: mpi_allreduce_) ahead of
// libmpi_mpifh under LD_PRELOAD, convert the handles (MPI_Comm_f2c, MPI_Type_f2c,
// MPI_Op_f2c) and Fortran's MPI_IN_PLACE (the address of Open MPI's common block
// mpi_fortran_in_place_) and call the library's C entry points, which decide per call
// exactly as for C. `use mpi_f08` (other symbols) is not intercepted.
#include <mpi.h>

extern "C" {

// Open MPI's Fortran MPI_IN_PLACE sentinel (defined by libmpi_mpifh; weak: a C program
// that preloads the library does not load it).
extern int mpi_fortran_in_place_ __attribute__((weak));

}  // extern "C"

namespace {

/// A Fortran send buffer as C sees it: MPI_IN_PLACE for the sentinel's address.
const void* in_place(const void* buf) {
  return (&mpi_fortran_in_place_ != nullptr && buf == static_cast<const void*>(&mpi_fortran_in_place_)) ? MPI_IN_PLACE
                                                                                                         : buf;
}
void* in_place_mut(void* buf) { return const_cast<void*>(in_place(buf)); }

}  // namespace

extern "C" {

// Init and Finalize too: the configuration is loaded at MPI_Init and the report printed at
// MPI_Finalize, which Fortran's bindings would otherwise reach through PMPI_ directly.
void mpi_init_(MPI_Fint* ierr) { *ierr = MPI_Init(nullptr, nullptr); }
void mpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  int prov = 0;
  *ierr = MPI_Init_thread(nullptr, nullptr, *required, &prov);
  *provided = prov;
}
void mpi_finalize_(MPI_Fint* ierr) { *ierr = MPI_Finalize(); }

void mpi_allreduce_(void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* op, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Allreduce(in_place(s), r, *n, MPI_Type_f2c(*t), MPI_Op_f2c(*op), MPI_Comm_f2c(*c));
}
void mpi_scan_(void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* op, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Scan(in_place(s), r, *n, MPI_Type_f2c(*t), MPI_Op_f2c(*op), MPI_Comm_f2c(*c));
}
void mpi_exscan_(void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* op, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Exscan(in_place(s), r, *n, MPI_Type_f2c(*t), MPI_Op_f2c(*op), MPI_Comm_f2c(*c));
}
void mpi_reduce_(void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* op, MPI_Fint* root, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Reduce(in_place(s), r, *n, MPI_Type_f2c(*t), MPI_Op_f2c(*op), *root, MPI_Comm_f2c(*c));
}
void mpi_bcast_(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* root, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Bcast(b, *n, MPI_Type_f2c(*t), *root, MPI_Comm_f2c(*c));
}
void mpi_barrier_(MPI_Fint* c, MPI_Fint* ierr) { *ierr = MPI_Barrier(MPI_Comm_f2c(*c)); }
void mpi_reduce_scatter_block_(void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* op, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Reduce_scatter_block(in_place(s), r, *n, MPI_Type_f2c(*t), MPI_Op_f2c(*op), MPI_Comm_f2c(*c));
}
void mpi_reduce_scatter_(void* s, void* r, MPI_Fint* counts, MPI_Fint* t, MPI_Fint* op, MPI_Fint* c, MPI_Fint* ierr) {
  // MPI_Fint is int in Open MPI's default build (the counts array is passed through).
  static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint must be int to pass recvcounts");
  *ierr = MPI_Reduce_scatter(in_place(s), r, reinterpret_cast<const int*>(counts), MPI_Type_f2c(*t), MPI_Op_f2c(*op),
                             MPI_Comm_f2c(*c));
}
void mpi_allgather_(void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Allgather(in_place(s), *sn, MPI_Type_f2c(*st), r, *rn, MPI_Type_f2c(*rt), MPI_Comm_f2c(*c));
}
void mpi_alltoall_(void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c, MPI_Fint* ierr) {
  *ierr = MPI_Alltoall(in_place(s), *sn, MPI_Type_f2c(*st), r, *rn, MPI_Type_f2c(*rt), MPI_Comm_f2c(*c));
}
void mpi_gather_(void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root, MPI_Fint* c,
                 MPI_Fint* ierr) {
  *ierr = MPI_Gather(in_place(s), *sn, MPI_Type_f2c(*st), r, *rn, MPI_Type_f2c(*rt), *root, MPI_Comm_f2c(*c));
}
void mpi_scatter_(void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* root, MPI_Fint* c,
                  MPI_Fint* ierr) {
  *ierr = MPI_Scatter(s, *sn, MPI_Type_f2c(*st), in_place_mut(r), *rn, MPI_Type_f2c(*rt), *root, MPI_Comm_f2c(*c));
}

}  // extern "C"
