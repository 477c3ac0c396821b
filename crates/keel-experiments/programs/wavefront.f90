! keel omp bench: wavefront.c in Fortran 2008 (the same arithmetic, the
! same checksum). Cell (i, j) of an M x M grid depends on (i-1, j),
! (i, j-1) and (i-1, j-1); each sweep runs the anti-diagonals in order, one
! schedule(runtime) loop per anti-diagonal (2M - 1 instances of 1 to M
! cells). A cell holds a longest-common-subsequence score over two random
! 4-letter sequences above 20 low bits: the result of WORK steps of a
! 32-bit linear congruential recurrence seeded by its three neighbours.
! Cell (i, j) is h(j, i), laid out in memory as wavefront.c's h[i][j].
!
! usage: wavefront M WORK SWEEPS
! prints: loop_seconds=<time inside the loops> checksum=<sum of the cells
!         after every sweep> loop.diagonal=<the same time>
program wavefront
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64, low = 1048575_int64
  integer(int64) :: m, work, sweeps, sweep, p, d, lo, hi, i, j, k, up, left, diag, score, x, checksum
  integer(int64), allocatable :: h(:, :), a(:), b(:)
  real(real64) :: seconds, t0

  if (.not. (count_arg(1, 1_int64, 2_int64**13, m) .and. count_arg(2, 1_int64, 2_int64**20, work) &
             .and. count_arg(3, 1_int64, 2_int64**20, sweeps)) .or. command_argument_count() /= 3) then
    call usage('wavefront M WORK SWEEPS')
  end if
  allocate (h(0:m, 0:m), a(m), b(m))
  h = 0
  checksum = 0
  seconds = 0.0_real64
  do sweep = 0, sweeps - 1
    do p = 1, m
      a(p) = letter(p, 2 * sweep)
      b(p) = letter(p, 2 * sweep + 1)
    end do
    do p = 0, m
      h(p, 0) = iand(p + sweep, low)
      h(0, p) = iand(3 * p + sweep, low)
    end do
    do d = 2, 2 * m
      lo = max(1_int64, d - m)
      hi = min(m, d - 1)
      t0 = omp_get_wtime()
      !$omp parallel do schedule(runtime) private(j, k, up, left, diag, score, x)
      do i = lo, hi
        j = d - i
        up = h(j, i - 1)
        left = h(j - 1, i)
        diag = h(j - 1, i - 1)
        score = ishft(diag, -20)
        if (a(i) == b(j)) score = score + 1
        score = max(score, ishft(up, -20), ishft(left, -20))
        x = iand(iand(up, low) + iand(left, low) * 3 + iand(diag, low) * 5, mask)
        do k = 1, work
          x = iand(x * 1664525_int64 + 1013904223_int64, mask)
        end do
        h(j, i) = ior(ishft(score, 20), iand(x, low))
      end do
      !$omp end parallel do
      seconds = seconds + (omp_get_wtime() - t0)
    end do
    checksum = checksum + sum(h)
  end do
  print '(6a)', 'loop_seconds=', seconds_text(seconds), ' checksum=', int_text(checksum), &
    ' loop.diagonal=', seconds_text(seconds)

contains

  ! The letter at position p of a sweep's sequence (0..3).
  integer(int64) function letter(p, salt)
    integer(int64), intent(in) :: p, salt
    letter = mod(iand(p * 2654435761_int64, mask) + salt * 40503_int64, 4_int64)
  end function
end program
