! keel omp bench: short_balanced.c in Fortran 2008 (the same arithmetic,
! the same checksum). Many short balanced loops, as in a dynamic-
! programming path search: instance t is one parallel do schedule(runtime)
! over ITERATIONS cells, cell i taking the least of the previous row's
! cells i-1, i, i+1 and running WORK steps of a 32-bit linear congruential
! recurrence from it.
!
! usage: short_balanced ITERATIONS WORK INSTANCES
! prints: loop_seconds=<time inside the loops> checksum=<sum of the last
!         row> loop.row=<the same time>
program short_balanced
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  integer(int64) :: n, work, instances, t, i, k, x
  integer(int64), allocatable :: rows(:, :)
  integer :: prev, cur
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**20, n) .and. count_arg(2, 1_int64, 2_int64**20, work) &
             .and. count_arg(3, 1_int64, 2_int64**30, instances)) .or. command_argument_count() /= 3) then
    call usage('short_balanced ITERATIONS WORK INSTANCES')
  end if
  ! Two rows with a border cell at each end that stays 2^32 (above every
  ! state), so the minimum at the edges reads only real cells.
  allocate (rows(0:n + 1, 0:1))
  rows = 2_int64**32
  do i = 1, n
    rows(i, 0) = i * 7919
  end do
  prev = 0
  cur = 1
  seconds = 0.0_real64
  do t = 0, instances - 1
    t0 = omp_get_wtime()
    !$omp parallel do schedule(runtime) private(k, x)
    do i = 1, n
      x = min(rows(i, prev), rows(i - 1, prev), rows(i + 1, prev))
      x = iand(x + t + i, mask)
      do k = 1, work
        x = iand(x * 1664525_int64 + 1013904223_int64, mask)
      end do
      rows(i, cur) = x
    end do
    !$omp end parallel do
    seconds = seconds + (omp_get_wtime() - t0)
    prev = 1 - prev
    cur = 1 - cur
  end do
  print '(6a)', 'loop_seconds=', seconds_text(seconds), ' checksum=', int_text(sum(rows(1:n, prev))), &
    ' loop.row=', seconds_text(seconds)
end program
