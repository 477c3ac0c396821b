! keel omp bench: triangular.c in Fortran 2008 (the same arithmetic, the
! same checksum). Iteration i of N (from 0) runs (N - i) * UNIT steps of a
! 32-bit linear congruential recurrence from its own previous state: the
! first iterations cost N times the last.
!
! usage: triangular N UNIT STEPS
! prints: loop_seconds=<time inside the loops> checksum=<sum of the states
!         after every step> loop.rows=<the same time>
program triangular
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  integer(int64) :: n, unit, steps, i, k, step, x, checksum
  integer(int64), allocatable :: state(:)
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**20, n) .and. count_arg(2, 1_int64, 2_int64**20, unit) &
             .and. count_arg(3, 1_int64, 2_int64**24, steps)) .or. command_argument_count() /= 3) then
    call usage('triangular N UNIT STEPS')
  end if
  allocate (state(0:n - 1))
  do i = 0, n - 1
    state(i) = i
  end do
  checksum = 0
  seconds = 0.0_real64
  do step = 0, steps - 1
    t0 = omp_get_wtime()
    ! States stay below 2^32 and products below 2^53: no overflow.
    !$omp parallel do schedule(runtime) private(x, k)
    do i = 0, n - 1
      x = iand(state(i) + step, mask)
      do k = 1, (n - i) * unit
        x = iand(x * 1664525_int64 + 1013904223_int64, mask)
      end do
      state(i) = x
    end do
    !$omp end parallel do
    seconds = seconds + (omp_get_wtime() - t0)
    checksum = checksum + sum(state)
  end do
  print '(6a)', 'loop_seconds=', seconds_text(seconds), ' checksum=', int_text(checksum), &
    ' loop.rows=', seconds_text(seconds)
end program
