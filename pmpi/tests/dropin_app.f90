! The Fortran drop-in program (docs/pmpi.md, "Fortran"): plain `use mpi`, knows nothing of
! bine. Collectives the library serves, MPI_IN_PLACE included; rank 0 prints checksums that
! must be the same with and without LD_PRELOAD=libbine_pmpi.so.
program dropin_f
  use mpi
  implicit none
  integer, parameter :: k = 5
  integer :: ierr, rank, p, i
  integer :: mine(k), red(k), pre(k)
  integer, allocatable :: all(:), all2(:)
  double precision :: v(64), w(64)
  integer(8) :: cs
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  allocate(all(k * p), all2(k * p))
  do i = 1, 64
    v(i) = dble(mod(rank * 7 + i, 11))
  end do
  call MPI_Allreduce(v, w, 64, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, v, 64, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(A, F12.1, F12.1)', 'checksum f-allreduce ', sum(w), sum(v)
  cs = 0
  do i = 1, k
    mine(i) = rank * 10 + i
  end do
  call MPI_Bcast(mine, k, MPI_INTEGER, p - 1, MPI_COMM_WORLD, ierr)
  cs = cs * 3 + sum(mine)
  do i = 1, k
    mine(i) = rank * 10 + i
  end do
  call MPI_Reduce(mine, red, k, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) cs = cs * 5 + sum(red)
  call MPI_Allgather(mine, k, MPI_INTEGER, all, k, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, k * p
    cs = mod(cs * 7 + all(i), 1000000007_8)
  end do
  do i = 1, k * p
    all(i) = rank * 100 + i
  end do
  call MPI_Alltoall(all, k, MPI_INTEGER, all2, k, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_Gather(all2, k, MPI_INTEGER, all, k, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, k * p
      cs = mod(cs * 11 + all(i), 1000000007_8)
    end do
  end if
  call MPI_Scan(mine, pre, k, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Reduce_scatter_block(all2, red, k, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Gather(pre, k, MPI_INTEGER, all, k, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Gather(red, k, MPI_INTEGER, all2, k, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, k * p
      cs = mod(cs * 13 + all(i) * 3 + all2(i), 1000000007_8)
    end do
    print '(A, I0)', 'checksum f-blocks ', cs
  end if
  call MPI_Finalize(ierr)
end program dropin_f
