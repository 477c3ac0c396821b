! keel omp bench: multi_loop.c in Fortran 2008 (the same arithmetic, the
! same checksum). Each step runs three schedule(runtime) loops that want
! different schedules: mandel (escape times, one iteration per image row of
! a window off the real axis: imbalanced), tasks (TASKS tasks of power-law
! cost: octave k, [8 * 2^k, 16 * 2^k) units of UNIT recurrence steps, with
! probability proportional to 2^(-1.5 k), k up to 10, drawn with a fixed
! seed) and triad (a STREAM triad over N doubles, the three arrays taking
! the roles in turn as in stream.f90).
!
! usage: multi_loop WIDTH HEIGHT MAX_ITER TASKS UNIT N STEPS
! prints: loop_seconds=<time inside the three loops> checksum=<escape
!         times + task states + the triad's bit halves> loop.mandel=<s>
!         loop.tasks=<s> loop.triad=<s>
program multi_loop
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use omp_lib
  use bench_io
  implicit none
  integer(int64), parameter :: mask = 4294967295_int64
  integer(int64), parameter :: up = 1518500250_int64, octaves = 10, smallest = 8
  integer(int64) :: seed, width, height, max_iter, tasks, unit, n, steps
  integer(int64) :: step, r, t, i, k, base, x, checksum
  integer(int64), allocatable :: rows(:), cost(:), state(:)
  real(real64), allocatable :: a(:, :)
  real(real64) :: mandel, work, triad, t0, t1, t2, t3
  integer :: ax, ay, az, j

  if (.not. (count_arg(1, 1_int64, 2_int64**14, width) .and. count_arg(2, 1_int64, 2_int64**14, height) &
             .and. count_arg(3, 1_int64, 2_int64**20, max_iter) .and. count_arg(4, 1_int64, 2_int64**24, tasks) &
             .and. count_arg(5, 1_int64, 2_int64**20, unit) .and. count_arg(6, 1_int64, 2_int64**28, n) &
             .and. count_arg(7, 1_int64, 2_int64**24, steps)) .or. command_argument_count() /= 7) then
    call usage('multi_loop WIDTH HEIGHT MAX_ITER TASKS UNIT N STEPS')
  end if
  seed = 4049
  allocate (rows(0:height - 1), cost(0:tasks - 1), state(0:tasks - 1), a(n, 0:2))
  do t = 0, tasks - 1
    k = 0
    do while (k < octaves)
      if (next() >= up) exit
      k = k + 1
    end do
    base = ishft(smallest, k)
    cost(t) = (base + mod(ishft(next(), -16), base)) * unit
    state(t) = t
  end do
  do i = 1, n
    a(i, 0) = 0.0_real64
    a(i, 1) = 1.0_real64 + real(mod(i - 1, 1000_int64), real64) * 0.5_real64
    a(i, 2) = 2.0_real64 + real(mod(i - 1, 777_int64), real64) * 0.25_real64
  end do
  checksum = 0
  mandel = 0.0_real64
  work = 0.0_real64
  triad = 0.0_real64
  do step = 0, steps - 1
    t0 = omp_get_wtime()
    !$omp parallel do schedule(runtime)
    do r = 0, height - 1
      rows(r) = escape_row(r)
    end do
    !$omp end parallel do
    t1 = omp_get_wtime()
    !$omp parallel do schedule(runtime) private(k, x)
    do t = 0, tasks - 1
      x = iand(state(t) + step, mask)
      do k = 1, cost(t)
        x = iand(x * 1664525_int64 + 1013904223_int64, mask)
      end do
      state(t) = x
    end do
    !$omp end parallel do
    t2 = omp_get_wtime()
    ax = int(mod(step, 3_int64))
    ay = int(mod(step + 1, 3_int64))
    az = int(mod(step + 2, 3_int64))
    !$omp parallel do schedule(runtime)
    do i = 1, n
      a(i, ax) = a(i, ay) + 0.5_real64 * a(i, az)
    end do
    !$omp end parallel do
    t3 = omp_get_wtime()
    mandel = mandel + (t1 - t0)
    work = work + (t2 - t1)
    triad = triad + (t3 - t2)
    checksum = checksum + sum(rows) + sum(state)
  end do
  do j = 0, 2
    checksum = checksum + halves(a(:, j))
  end do
  print '(12a)', 'loop_seconds=', seconds_text(mandel + work + triad), ' checksum=', int_text(checksum), &
    ' loop.mandel=', seconds_text(mandel), ' loop.tasks=', seconds_text(work), &
    ' loop.triad=', seconds_text(triad)

contains

  integer(int64) function next()
    seed = iand(seed * 1664525_int64 + 1013904223_int64, mask)
    next = seed
  end function

  ! The window: x in [-2.25, 0.75], y in [-1.0, 2.0], evaluated in the
  ! order multi_loop.c evaluates it.
  integer(int64) function escape_row(row)
    integer(int64), intent(in) :: row
    real(real64) :: cx, cy, zx, zy, x2, y2
    integer(int64) :: c, steps_taken
    cy = -1.0_real64 + 3.0_real64 * real(row, real64) / real(height, real64)
    escape_row = 0
    do c = 0, width - 1
      cx = -2.25_real64 + 3.0_real64 * real(c, real64) / real(width, real64)
      zx = 0.0_real64
      zy = 0.0_real64
      steps_taken = 0
      do while (steps_taken < max_iter)
        x2 = zx * zx
        y2 = zy * zy
        if (x2 + y2 > 4.0_real64) exit
        zy = 2.0_real64 * zx * zy + cy
        zx = x2 - y2 + cx
        steps_taken = steps_taken + 1
      end do
      escape_row = escape_row + steps_taken
    end do
  end function

  ! The halves of each double's bits (ishft is a logical shift): below
  ! 2^33 per element, so the sum over fewer than 2^30 cannot overflow.
  integer(int64) function halves(v)
    real(real64), intent(in) :: v(:)
    integer(int64) :: i, bits
    halves = 0
    do i = 1, size(v, kind=int64)
      bits = transfer(v(i), 0_int64)
      halves = halves + iand(bits, mask) + ishft(bits, -32)
    end do
  end function
end program
