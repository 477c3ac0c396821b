! keel omp bench: sparse.c in Fortran 2008 (the same generator, the same
! arithmetic, the same checksum). A sparse matrix-vector product over ROWS
! rows of power-law lengths (octave k, [4 * 2^k, 8 * 2^k) entries, with
! probability proportional to 2^(-1.5 k), k up to 12), generated with a
! fixed seed by a 32-bit linear congruential generator; one
! schedule(runtime) loop over the rows per step, each step multiplying the
! vector the previous one made.
!
! usage: sparse ROWS STEPS
! prints: loop_seconds=<time inside the loops> checksum=<sum of the rows'
!         low 32 bits after every step> loop.spmv=<the same time>
program sparse
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  ! 2^32 * 2^-1.5: the chance of going up one more octave.
  integer(int64), parameter :: up = 1518500250_int64, octaves = 12, shortest = 4
  integer(int64) :: seed, rows, steps, r, e, k, base, nonzeros, step, total, checksum
  integer(int64), allocatable :: start(:), col(:), val(:), x(:), y(:)
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**22, rows) .and. count_arg(2, 1_int64, 2_int64**24, steps)) &
      .or. command_argument_count() /= 2) then
    call usage('sparse ROWS STEPS')
  end if
  seed = 2024
  allocate (start(0:rows), x(0:rows - 1), y(0:rows - 1))
  start(0) = 0
  do r = 0, rows - 1
    k = 0
    do while (k < octaves)
      if (next() >= up) exit
      k = k + 1
    end do
    base = ishft(shortest, k)
    start(r + 1) = start(r) + base + mod(ishft(next(), -16), base)
  end do
  nonzeros = start(rows)
  allocate (col(0:nonzeros - 1), val(0:nonzeros - 1))
  do e = 0, nonzeros - 1
    col(e) = ishft(next() * rows, -32)
    val(e) = ishft(next(), -16)
  end do
  do r = 0, rows - 1
    x(r) = iand(r, 65535_int64)
  end do
  checksum = 0
  seconds = 0.0_real64
  do step = 0, steps - 1
    t0 = omp_get_wtime()
    ! Entries below 2^16 times values below 2^16, at most 2^16 per row: a
    ! row's sum stays below 2^48.
    !$omp parallel do schedule(runtime) private(e, total)
    do r = 0, rows - 1
      total = 0
      do e = start(r), start(r + 1) - 1
        total = total + val(e) * x(col(e))
      end do
      y(r) = total
    end do
    !$omp end parallel do
    seconds = seconds + (omp_get_wtime() - t0)
    do r = 0, rows - 1
      checksum = checksum + iand(y(r), mask)
      x(r) = iand(y(r) + r, 65535_int64)
    end do
  end do
  print '(6a)', 'loop_seconds=', seconds_text(seconds), ' checksum=', int_text(checksum), &
    ' loop.spmv=', seconds_text(seconds)

contains

  ! The generator's next state, below 2^32 (its high bits are the random
  ! ones).
  integer(int64) function next()
    seed = iand(seed * 1664525_int64 + 1013904223_int64, mask)
    next = seed
  end function
end program
