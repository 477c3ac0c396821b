! keel omp bench: the command-line and printing helpers the Fortran
! programs share (`use bench_io`). `keel omp bench` compiles this file with
! each program: gfortran -fopenmp -O2 -J <dir> bench_io.f90 <program>.f90.
module bench_io
  use, intrinsic :: iso_fortran_env, only: int64, real64, error_unit
  implicit none
  private
  public :: count_arg, usage, seconds_text, int_text

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

  ! Prints `usage: <text>` on stderr and ends the program with status 2 (the
  ! C programs' usage error).
  subroutine usage(text)
    character(len=*), intent(in) :: text
    write (error_unit, '(2a)') 'usage: ', text
    stop 2, quiet=.true.
  end subroutine

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
end module
