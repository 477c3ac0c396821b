! keel omp bench: stream.c in Fortran 2008 (the same arithmetic, the same
! checksum). A STREAM triad x = y + 0.5 * z over N doubles per step, one
! schedule(runtime) loop, the three arrays taking the roles x, y, z in turn
! (step t writes array mod(t, 3)), so that every step reads what the
! previous one wrote.
!
! usage: stream N STEPS
! prints: loop_seconds=<time inside the loops> checksum=<sum of the 32-bit
!         halves of the final arrays' bits> loop.triad=<the same time>
program stream
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  integer(int64) :: n, steps, i, step, bits, checksum
  integer :: x, y, z, k
  real(real64), allocatable :: a(:, :)
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**28, n) .and. count_arg(2, 1_int64, 2_int64**24, steps)) &
      .or. command_argument_count() /= 2) then
    call usage('stream N STEPS')
  end if
  allocate (a(n, 0:2))
  do i = 1, n
    a(i, 0) = 0.0_real64
    a(i, 1) = 1.0_real64 + real(mod(i - 1, 1000_int64), real64) * 0.5_real64
    a(i, 2) = 2.0_real64 + real(mod(i - 1, 777_int64), real64) * 0.25_real64
  end do
  seconds = 0.0_real64
  do step = 0, steps - 1
    x = int(mod(step, 3_int64))
    y = int(mod(step + 1, 3_int64))
    z = int(mod(step + 2, 3_int64))
    t0 = omp_get_wtime()
    !$omp parallel do schedule(runtime)
    do i = 1, n
      a(i, x) = a(i, y) + 0.5_real64 * a(i, z)
    end do
    !$omp end parallel do
    seconds = seconds + (omp_get_wtime() - t0)
  end do
  ! The halves of each double's bits (ishft is a logical shift): below
  ! 2^33 per element, so the sum cannot overflow.
  checksum = 0
  do k = 0, 2
    do i = 1, n
      bits = transfer(a(i, k), 0_int64)
      checksum = checksum + iand(bits, mask) + ishft(bits, -32)
    end do
  end do
  print '(6a)', 'loop_seconds=', seconds_text(seconds), ' checksum=', int_text(checksum), &
    ' loop.triad=', seconds_text(seconds)
end program
