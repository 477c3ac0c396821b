! keel omp bench: phase_shift.c in Fortran 2008 (the same arithmetic, the
! same checksum). One schedule(runtime) loop of N iterations runs STEPS
! times: in the first half of the steps every iteration runs WORK steps of
! a 32-bit linear congruential recurrence, in the second half the first
! HEAD iterations run HEAVY times as many.
!
! usage: phase_shift N WORK STEPS HEAD HEAVY
! prints: loop_seconds=<time inside the loops> checksum=<sum of the states
!         after every step> loop.shift=<the same time>
program phase_shift
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  integer(int64) :: n, work, steps, head, heavy, heavy_until, step, i, k, cost, x, checksum
  integer(int64), allocatable :: state(:)
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**24, n) .and. count_arg(2, 1_int64, 2_int64**20, work) &
             .and. count_arg(3, 1_int64, 2_int64**24, steps) .and. count_arg(4, 0_int64, 2_int64**24, head) &
             .and. count_arg(5, 1_int64, 2_int64**20, heavy)) .or. command_argument_count() /= 5) then
    call usage('phase_shift N WORK STEPS HEAD HEAVY (HEAD <= N)')
  end if
  if (head > n) then
    call usage('phase_shift N WORK STEPS HEAD HEAVY (HEAD <= N)')
  end if
  allocate (state(0:n - 1))
  do i = 0, n - 1
    state(i) = i
  end do
  checksum = 0
  seconds = 0.0_real64
  do step = 0, steps - 1
    heavy_until = 0
    if (2 * step >= steps) heavy_until = head
    t0 = omp_get_wtime()
    !$omp parallel do schedule(runtime) private(k, cost, x)
    do i = 0, n - 1
      cost = work
      if (i < heavy_until) cost = work * heavy
      x = iand(state(i) + step, mask)
      do k = 1, cost
        x = iand(x * 1664525_int64 + 1013904223_int64, mask)
      end do
      state(i) = x
    end do
    !$omp end parallel do
    seconds = seconds + (omp_get_wtime() - t0)
    checksum = checksum + sum(state)
  end do
  print '(6a)', 'loop_seconds=', seconds_text(seconds), ' checksum=', int_text(checksum), &
    ' loop.shift=', seconds_text(seconds)
end program
