! gfortran's loops through the interposer: schedule(runtime) do loops
! (combined and orphaned), a reduction, nowait loops, a negative stride,
! omp_set_schedule, and 8-byte bounds. Prints "all ok" when every
! iteration ran exactly as often as it should.
program loops
  use omp_lib
  implicit none
  integer, parameter :: n = 10007
  integer :: counts(n), i, k, fails
  integer(8) :: total, j, big
  fails = 0
  counts = 0

  !$omp parallel do schedule(runtime)
  do i = 1, n
    !$omp atomic
    counts(i) = counts(i) + 1
  end do
  !$omp end parallel do

  !$omp parallel
  do k = 1, 20
    !$omp do schedule(runtime)
    do i = n, 1, -1
      !$omp atomic
      counts(i) = counts(i) + 1
    end do
    !$omp end do nowait
  end do
  !$omp end parallel

  call omp_set_schedule(omp_sched_dynamic, 5)
  !$omp parallel do schedule(runtime)
  do i = 1, n, 3
    !$omp atomic
    counts(i) = counts(i) + 1
    if (i + 1 <= n) then
      !$omp atomic
      counts(i + 1) = counts(i + 1) + 1
    end if
    if (i + 2 <= n) then
      !$omp atomic
      counts(i + 2) = counts(i + 2) + 1
    end if
  end do
  !$omp end parallel do

  if (any(counts /= 22)) then
    print *, 'FAIL counts', minval(counts), maxval(counts)
    fails = fails + 1
  end if

  total = 0
  big = 3000000000_8
  !$omp parallel do schedule(runtime) reduction(+:total)
  do j = big, big + 9999
    total = total + (j - big)
  end do
  !$omp end parallel do
  if (total /= 49995000_8) then
    print *, 'FAIL reduction', total
    fails = fails + 1
  end if

  if (fails == 0) print '(a)', 'all ok'
  if (fails /= 0) stop 1
end program loops
