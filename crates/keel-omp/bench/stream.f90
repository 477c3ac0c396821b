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
  use, intrinsic :: iso_fortran_env, only: int64, real64, error_unit
  use omp_lib
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  integer(int64) :: n, steps, i, step, bits, checksum
  integer :: x, y, z, k
  real(real64), allocatable :: a(:, :)
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**28, n) .and. count_arg(2, 1_int64, 2_int64**24, steps)) &
      .or. command_argument_count() /= 2) then
    write (error_unit, '(a)') 'usage: stream N STEPS'
    stop 2, quiet=.true.
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

contains

  ! Argument k as an integer in [lo, hi].
  logical function count_arg(k, lo, hi, v)
    integer, intent(in) :: k
    integer(int64), intent(in) :: lo, hi
    integer(int64), intent(out) :: v
    character(len=64) :: text
    integer :: status
    v = 0
    count_arg = .false.
    call get_command_argument(k, text, status=status)
    if (status /= 0 .or. len_trim(text) == 0 .or. verify(trim(text), '0123456789') /= 0) return
    read (text, *, iostat=status) v
    count_arg = status == 0 .and. v >= lo .and. v <= hi
  end function

  ! Seconds as C's %.9f prints them (with the leading zero f0.9 leaves out).
  function seconds_text(s) result(text)
    real(real64), intent(in) :: s
    character(len=:), allocatable :: text
    character(len=40) :: buf
    write (buf, '(f0.9)') s
    text = trim(adjustl(buf))
    if (text(1:1) == '.') text = '0'//text
  end function

  function int_text(v) result(text)
    integer(int64), intent(in) :: v
    character(len=:), allocatable :: text
    character(len=24) :: buf
    write (buf, '(i0)') v
    text = trim(buf)
  end function
end program
