! libkeel from Fortran through the keel module: maps the tasks of a load
! file (one "load [current_pu]" per line) and prints "dest <task> <pu>"
! (0-based, as libkeel gives them), then runs a parallel loop whose
! per-iteration counters must all be 1, and prints "all ok".
!
!   loop_map FILE PUS SPEC
module counting
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int64_t), parameter :: n = 20000
contains
  !> The loop body: iterations b .. e-1, counted in the array ctx points to.
  integer(c_int) function count_chunk(b, e, thread, ctx) bind(c)
    integer(c_int64_t), value :: b, e
    integer(c_size_t), value :: thread
    type(c_ptr), value :: ctx
    integer(c_int), pointer :: hits(:)
    integer(c_int64_t) :: i
    call c_f_pointer(ctx, hits, [n])
    do i = b, e - 1
      hits(i + 1) = hits(i + 1) + 1
    end do
    count_chunk = 0
    if (thread > 63) count_chunk = 1
  end function
end module

program loop_map
  use, intrinsic :: iso_c_binding
  use keel
  use counting
  implicit none
  character(len=4096) :: path, pus_text, spec
  real(c_double), allocatable, target :: loads(:)
  integer(c_int64_t), allocatable, target :: current(:)
  integer(c_int), allocatable, target :: hits(:)
  real(c_double), allocatable :: hints(:)
  integer(c_int64_t), pointer :: dest(:)
  type(keel_map_input) :: input
  type(keel_map_metrics) :: metrics
  type(keel_loop_stats) :: stats
  type(c_ptr) :: mapper, result, pool
  type(c_funptr) :: body
  integer(c_size_t) :: ndest
  integer(c_int) :: status
  integer :: unit, ios, ntasks, npus, i, got
  real(c_double) :: load
  integer(c_int64_t) :: pu
  logical :: have_current
  character(len=256) :: line

  call get_command_argument(1, path)
  call get_command_argument(2, pus_text)
  call get_command_argument(3, spec)
  read (pus_text, *) npus

  ! Two passes over the file: count, then read.
  open (newunit=unit, file=trim(path), status='old', action='read')
  ntasks = 0
  do
    read (unit, '(a)', iostat=ios) line
    if (ios /= 0) exit
    if (len_trim(line) > 0) ntasks = ntasks + 1
  end do
  allocate(loads(ntasks), current(ntasks))
  rewind (unit)
  have_current = .false.
  i = 0
  do
    read (unit, '(a)', iostat=ios) line
    if (ios /= 0) exit
    if (len_trim(line) == 0) cycle
    i = i + 1
    pu = -1
    read (line, *, iostat=got) load, pu
    if (got /= 0) read (line, *) load
    if (got == 0) have_current = .true.
    loads(i) = load
    current(i) = pu
  end do
  close (unit)

  mapper = keel_mapper_new(keel_cstr(spec), status)
  if (status /= KEEL_OK) call die('keel_mapper_new')
  input%task_loads = c_loc(loads)
  input%num_tasks = ntasks
  input%num_pus = npus
  if (have_current) then
    input%current_pu = c_loc(current)
    input%num_current_pu = ntasks
  end if
  status = keel_map(mapper, input, result)
  if (status /= KEEL_OK) call die('keel_map')
  call c_f_pointer(keel_result_destinations(result, ndest), dest, [ndest])
  do i = 1, int(ndest)
    print '(a,i0,a,i0)', 'dest ', i - 1, ' ', dest(i)
  end do
  status = keel_result_metrics(result, metrics)
  print '(a,es24.17,a,i0)', 'lambda=', metrics%lambda, ' migrations=', metrics%migrations
  call keel_result_free(result)
  call keel_mapper_free(mapper)

  ! A bad spec is a status and a message, not a crash.
  mapper = keel_mapper_new(keel_cstr('hier:nodes=('), status)
  if (status /= KEEL_ERR_SPEC .or. c_associated(mapper)) call die('a bad spec was accepted')

  pool = keel_pool_new(2_c_size_t, status)
  if (status /= KEEL_OK) call die('keel_pool_new')
  allocate(hits(n))
  hits = 0
  ! Held in a variable: a c_funloc passed straight to a module procedure
  ! becomes a constant with a relocation in a read-only section.
  body = c_funloc(count_chunk)
  status = keel_parallel_for_id(pool, 'fortran/count', 0_c_int64_t, n, 'dynamic,5', &
                                KEEL_LOOP_RECORDED, body, c_loc(hits), stats)
  if (status /= KEEL_OK) call die('keel_parallel_for_id')
  if (any(hits /= 1)) call die('an iteration did not run exactly once')
  if (stats%iterations /= n .or. stats%threads /= 2) call die('wrong statistics')
  hits = 0
  status = keel_parallel_for(pool, 0_c_int64_t, n, '', body, c_loc(hits))
  if (status /= KEEL_OK .or. any(hits /= 1)) call die('keel_parallel_for')
  ! binlpt maps the iterations by one hint each: heavier ones first here.
  allocate(hints(n))
  hints = [(real(n - i, c_double), i = 1, int(n))]
  hits = 0
  status = keel_parallel_for_hinted(pool, 'fortran/hinted', 0_c_int64_t, n, 'binlpt:chunks=32', &
                                    0_c_int32_t, hints, body, c_loc(hits), stats)
  if (status /= KEEL_OK .or. any(hits /= 1)) call die('keel_parallel_for_hinted')
  status = keel_parallel_for_hinted(pool, 'fortran/hinted', 0_c_int64_t, n, 'binlpt', &
                                    0_c_int32_t, hints(1:10), body, c_loc(hits), stats)
  if (status /= KEEL_ERR_LENGTH_MISMATCH) call die('hints of the wrong length were accepted')
  call keel_pool_free(pool)
  print '(a)', 'all ok'

contains
  subroutine die(what)
    character(len=*), intent(in) :: what
    write (0, '(a,a,a)') what, ': ', keel_error_message()
    error stop 1
  end subroutine
end program
