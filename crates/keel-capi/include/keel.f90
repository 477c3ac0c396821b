! keel: Fortran interfaces to libkeel (iso_c_binding), over the functions
! and types of keel.h, which documents each of them. Compile this file with
! your code and link with -lkeel.
!
! Conventions: strings go in NUL-terminated (keel_cstr(s) makes one);
! indices (tasks, PUs, threads) are 0-based, as in C; optional arrays of
! keel_map_input are c_null_ptr with length 0 when absent; a loop body is a
! bind(c) function taking (begin, end, thread, ctx) by value and returning
! 0 to go on, and runs the iterations begin .. end-1.
module keel
  use, intrinsic :: iso_c_binding
  implicit none
  private

  public :: keel_map_input, keel_map_metrics, keel_move, keel_loop_stats
  public :: keel_cstr, keel_fstr, keel_error_message
  public :: keel_last_error_message, keel_status_name, keel_version
  public :: keel_mapper_new, keel_mapper_set_param, keel_mapper_spec, keel_mapper_free
  public :: keel_map, keel_result_num_tasks, keel_result_destinations, keel_result_imports
  public :: keel_result_exports, keel_result_pu_times, keel_result_metrics, keel_result_free
  public :: keel_pool_new, keel_pool_threads, keel_pool_free, keel_parallel_for
  public :: keel_parallel_for_id, keel_parallel_for_hinted, keel_pool_last_stats
  public :: keel_loop_record_stats
  public :: keel_transfer, keel_mpi_metrics, keel_mpi_plan, keel_mpi_plan_tree
  public :: keel_mpi_plan_destinations
  public :: keel_mpi_plan_exports, keel_mpi_plan_imports, keel_mpi_plan_metrics, keel_mpi_plan_free

  ! keel_status
  integer(c_int), parameter, public :: KEEL_OK = 0
  integer(c_int), parameter, public :: KEEL_ERR_NULL_POINTER = 1
  integer(c_int), parameter, public :: KEEL_ERR_INVALID_ARGUMENT = 2
  integer(c_int), parameter, public :: KEEL_ERR_LENGTH_MISMATCH = 3
  integer(c_int), parameter, public :: KEEL_ERR_SPEC = 4
  integer(c_int), parameter, public :: KEEL_ERR_INVALID_INPUT = 5
  integer(c_int), parameter, public :: KEEL_ERR_UNMET_REQUIREMENT = 6
  integer(c_int), parameter, public :: KEEL_ERR_SCHEDULE = 7
  integer(c_int), parameter, public :: KEEL_ERR_POOL = 8
  integer(c_int), parameter, public :: KEEL_ERR_BODY = 9
  integer(c_int), parameter, public :: KEEL_ERR_PANIC = 10
  integer(c_int), parameter, public :: KEEL_ERR_NOT_FOUND = 11
  integer(c_int), parameter, public :: KEEL_ERR_MPI = 12

  integer(c_size_t), parameter, public :: KEEL_MAX_PUS = 1000000_c_size_t
  integer(c_int32_t), parameter, public :: KEEL_LOOP_RECORDED = 1

  type, bind(c) :: keel_map_input
    type(c_ptr) :: task_loads = c_null_ptr
    integer(c_size_t) :: num_tasks = 0
    integer(c_size_t) :: num_pus = 0
    type(c_ptr) :: current_pu = c_null_ptr
    integer(c_size_t) :: num_current_pu = 0
    type(c_ptr) :: migratable = c_null_ptr
    integer(c_size_t) :: num_migratable = 0
    type(c_ptr) :: pu_speeds = c_null_ptr
    integer(c_size_t) :: num_pu_speeds = 0
    type(c_ptr) :: pu_background = c_null_ptr
    integer(c_size_t) :: num_pu_background = 0
    type(c_ptr) :: pu_available = c_null_ptr
    integer(c_size_t) :: num_pu_available = 0
  end type

  type, bind(c) :: keel_map_metrics
    real(c_double) :: lambda, lib_percent, makespan, mean, lower_bound
    integer(c_int64_t) :: migrations
    integer(c_int64_t) :: splits  ! uint64_t in C
  end type

  type, bind(c) :: keel_move
    integer(c_int64_t) :: task  ! uint64_t in C
    integer(c_int64_t) :: from_pu, to_pu
  end type

  type, bind(c) :: keel_loop_stats
    integer(c_int64_t) :: threads, iterations, chunks  ! uint64_t in C
    real(c_double) :: t_par, lib_percent
  end type

  ! keel_mpi_plan's types (a libkeel built with its `mpi` feature).
  type, bind(c) :: keel_transfer
    integer(c_int64_t) :: id  ! uint64_t in C
    integer(c_int32_t) :: rank
    integer(c_int64_t) :: size  ! uint64_t in C
  end type

  type, bind(c) :: keel_mpi_metrics
    real(c_double) :: lambda_before, lambda_after, lib_percent, makespan
    integer(c_int64_t) :: migrations, bytes_moved, objects  ! uint64_t in C
  end type

  interface
    function keel_last_error_message() bind(c, name='keel_last_error_message')
      import :: c_ptr
      type(c_ptr) :: keel_last_error_message
    end function
    function keel_status_name(status) bind(c, name='keel_status_name')
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: keel_status_name
    end function
    function keel_version() bind(c, name='keel_version')
      import :: c_ptr
      type(c_ptr) :: keel_version
    end function

    function keel_mapper_new(spec, status) bind(c, name='keel_mapper_new')
      import :: c_ptr, c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: spec
      integer(c_int), intent(out) :: status
      type(c_ptr) :: keel_mapper_new
    end function
    function keel_mapper_set_param(mapper, key, value) bind(c, name='keel_mapper_set_param')
      import :: c_ptr, c_char, c_int
      type(c_ptr), value :: mapper
      character(kind=c_char), dimension(*), intent(in) :: key, value
      integer(c_int) :: keel_mapper_set_param
    end function
    function keel_mapper_spec(mapper) bind(c, name='keel_mapper_spec')
      import :: c_ptr
      type(c_ptr), value :: mapper
      type(c_ptr) :: keel_mapper_spec
    end function
    subroutine keel_mapper_free(mapper) bind(c, name='keel_mapper_free')
      import :: c_ptr
      type(c_ptr), value :: mapper
    end subroutine

    function keel_map(mapper, input, result) bind(c, name='keel_map')
      import :: c_ptr, c_int, keel_map_input
      type(c_ptr), value :: mapper
      type(keel_map_input), intent(in) :: input
      type(c_ptr), intent(out) :: result
      integer(c_int) :: keel_map
    end function
    function keel_result_num_tasks(result) bind(c, name='keel_result_num_tasks')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: result
      integer(c_size_t) :: keel_result_num_tasks
    end function
    function keel_result_destinations(result, len) bind(c, name='keel_result_destinations')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: result
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_result_destinations
    end function
    function keel_result_imports(result, len) bind(c, name='keel_result_imports')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: result
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_result_imports
    end function
    function keel_result_exports(result, len) bind(c, name='keel_result_exports')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: result
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_result_exports
    end function
    function keel_result_pu_times(result, len) bind(c, name='keel_result_pu_times')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: result
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_result_pu_times
    end function
    function keel_result_metrics(result, out) bind(c, name='keel_result_metrics')
      import :: c_ptr, c_int, keel_map_metrics
      type(c_ptr), value :: result
      type(keel_map_metrics), intent(out) :: out
      integer(c_int) :: keel_result_metrics
    end function
    subroutine keel_result_free(result) bind(c, name='keel_result_free')
      import :: c_ptr
      type(c_ptr), value :: result
    end subroutine

    ! The plan-only API across MPI ranks, in a libkeel built with its `mpi`
    ! feature: `comm` is the communicator's Fortran handle (MPI_COMM_WORLD
    ! as is); the arrays are c_loc of the caller's (sizes and migratable
    ! may be c_null_ptr).
    function keel_mpi_plan(comm, spec, ids, weights, sizes, migratable, num_objects, &
                           background, speed, out) bind(c, name='keel_mpi_plan')
      import :: c_int, c_ptr, c_size_t, c_double
      integer(c_int), value :: comm
      type(c_ptr), value :: spec, ids, weights, sizes, migratable
      integer(c_size_t), value :: num_objects
      real(c_double), value :: background, speed
      type(c_ptr), intent(out) :: out
      integer(c_int) :: keel_mpi_plan
    end function
    ! The same decided in groups of `group` ranks (leaders gather only
    ! their members' objects): the shape for thousands of ranks.
    function keel_mpi_plan_tree(comm, group, spec, ids, weights, sizes, migratable, &
                                num_objects, background, speed, out) &
        bind(c, name='keel_mpi_plan_tree')
      import :: c_int, c_ptr, c_size_t, c_double
      integer(c_int), value :: comm
      integer(c_size_t), value :: group
      type(c_ptr), value :: spec, ids, weights, sizes, migratable
      integer(c_size_t), value :: num_objects
      real(c_double), value :: background, speed
      type(c_ptr), intent(out) :: out
      integer(c_int) :: keel_mpi_plan_tree
    end function
    function keel_mpi_plan_destinations(plan, len) bind(c, name='keel_mpi_plan_destinations')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_mpi_plan_destinations
    end function
    function keel_mpi_plan_exports(plan, len) bind(c, name='keel_mpi_plan_exports')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_mpi_plan_exports
    end function
    function keel_mpi_plan_imports(plan, len) bind(c, name='keel_mpi_plan_imports')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t), intent(out) :: len
      type(c_ptr) :: keel_mpi_plan_imports
    end function
    function keel_mpi_plan_metrics(plan, out) bind(c, name='keel_mpi_plan_metrics')
      import :: c_ptr, c_int, keel_mpi_metrics
      type(c_ptr), value :: plan
      type(keel_mpi_metrics), intent(out) :: out
      integer(c_int) :: keel_mpi_plan_metrics
    end function
    subroutine keel_mpi_plan_free(plan) bind(c, name='keel_mpi_plan_free')
      import :: c_ptr
      type(c_ptr), value :: plan
    end subroutine

    function keel_pool_new(threads, status) bind(c, name='keel_pool_new')
      import :: c_ptr, c_size_t, c_int
      integer(c_size_t), value :: threads
      integer(c_int), intent(out) :: status
      type(c_ptr) :: keel_pool_new
    end function
    function keel_pool_threads(pool) bind(c, name='keel_pool_threads')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: pool
      integer(c_size_t) :: keel_pool_threads
    end function
    subroutine keel_pool_free(pool) bind(c, name='keel_pool_free')
      import :: c_ptr
      type(c_ptr), value :: pool
    end subroutine
    ! schedule: keel_cstr('dynamic,1'), or c_null_char alone for the default.
    function keel_parallel_for_c(pool, begin, end, schedule, body, ctx) &
        bind(c, name='keel_parallel_for')
      import :: c_ptr, c_int64_t, c_funptr, c_int
      type(c_ptr), value :: pool, schedule, ctx
      integer(c_int64_t), value :: begin, end
      type(c_funptr), value :: body
      integer(c_int) :: keel_parallel_for_c
    end function
    function keel_parallel_for_id_c(pool, loop_id, begin, end, schedule, flags, body, ctx, stats) &
        bind(c, name='keel_parallel_for_id')
      import :: c_ptr, c_int64_t, c_int32_t, c_funptr, c_int, c_char, keel_loop_stats
      type(c_ptr), value :: pool, schedule, ctx
      character(kind=c_char), dimension(*), intent(in) :: loop_id
      integer(c_int64_t), value :: begin, end
      integer(c_int32_t), value :: flags
      type(c_funptr), value :: body
      type(keel_loop_stats), intent(out) :: stats
      integer(c_int) :: keel_parallel_for_id_c
    end function
    function keel_parallel_for_hinted_c(pool, loop_id, begin, end, schedule, flags, workload, &
        num_workload, body, ctx, stats) bind(c, name='keel_parallel_for_hinted')
      import :: c_ptr, c_int64_t, c_int32_t, c_funptr, c_int, c_char, c_double, c_size_t, &
                keel_loop_stats
      type(c_ptr), value :: pool, schedule, ctx
      character(kind=c_char), dimension(*), intent(in) :: loop_id
      integer(c_int64_t), value :: begin, end
      integer(c_int32_t), value :: flags
      real(c_double), dimension(*), intent(in) :: workload
      integer(c_size_t), value :: num_workload
      type(c_funptr), value :: body
      type(keel_loop_stats), intent(out) :: stats
      integer(c_int) :: keel_parallel_for_hinted_c
    end function
    function keel_pool_last_stats(pool, out) bind(c, name='keel_pool_last_stats')
      import :: c_ptr, c_int, keel_loop_stats
      type(c_ptr), value :: pool
      type(keel_loop_stats), intent(out) :: out
      integer(c_int) :: keel_pool_last_stats
    end function
    function keel_loop_record_stats(loop_id, out) bind(c, name='keel_loop_record_stats')
      import :: c_int, c_char, keel_loop_stats
      character(kind=c_char), dimension(*), intent(in) :: loop_id
      type(keel_loop_stats), intent(out) :: out
      integer(c_int) :: keel_loop_record_stats
    end function

    function c_strlen(s) bind(c, name='strlen')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: c_strlen
    end function
  end interface

contains

  !> s without trailing blanks, NUL-terminated, for a C string argument.
  function keel_cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function

  !> The Fortran string of a C string returned by libkeel ('' for NULL).
  function keel_fstr(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  !> keel_last_error_message() as a Fortran string.
  function keel_error_message() result(s)
    character(len=:), allocatable :: s
    s = keel_fstr(keel_last_error_message())
  end function

  !> keel_parallel_for with the schedule as a Fortran string ('' for the
  !> default): body(begin, end, thread, ctx) for every chunk.
  function keel_parallel_for(pool, begin, end, schedule, body, ctx) result(status)
    type(c_ptr), intent(in) :: pool, ctx
    integer(c_int64_t), intent(in) :: begin, end
    character(len=*), intent(in) :: schedule
    type(c_funptr), intent(in) :: body
    integer(c_int) :: status
    character(kind=c_char, len=:), allocatable, target :: text
    if (len_trim(schedule) == 0) then
      status = keel_parallel_for_c(pool, begin, end, c_null_ptr, body, ctx)
    else
      text = keel_cstr(schedule)
      status = keel_parallel_for_c(pool, begin, end, c_loc(text), body, ctx)
    end if
  end function

  !> keel_parallel_for_id with the loop id and schedule as Fortran strings.
  function keel_parallel_for_id(pool, loop_id, begin, end, schedule, flags, body, ctx, stats) &
      result(status)
    type(c_ptr), intent(in) :: pool, ctx
    character(len=*), intent(in) :: loop_id, schedule
    integer(c_int64_t), intent(in) :: begin, end
    integer(c_int32_t), intent(in) :: flags
    type(c_funptr), intent(in) :: body
    type(keel_loop_stats), intent(out) :: stats
    integer(c_int) :: status
    character(kind=c_char, len=:), allocatable, target :: text
    if (len_trim(schedule) == 0) then
      status = keel_parallel_for_id_c(pool, keel_cstr(loop_id), begin, end, c_null_ptr, flags, &
                                      body, ctx, stats)
    else
      text = keel_cstr(schedule)
      status = keel_parallel_for_id_c(pool, keel_cstr(loop_id), begin, end, c_loc(text), flags, &
                                      body, ctx, stats)
    end if
  end function

  !> keel_parallel_for_hinted with Fortran strings: workload(i) is the
  !> hint of iteration begin + i - 1 (size(workload) = end - begin).
  function keel_parallel_for_hinted(pool, loop_id, begin, end, schedule, flags, workload, body, &
      ctx, stats) result(status)
    type(c_ptr), intent(in) :: pool, ctx
    character(len=*), intent(in) :: loop_id, schedule
    integer(c_int64_t), intent(in) :: begin, end
    integer(c_int32_t), intent(in) :: flags
    real(c_double), dimension(:), intent(in), target, contiguous :: workload
    type(c_funptr), intent(in) :: body
    type(keel_loop_stats), intent(out) :: stats
    integer(c_int) :: status
    character(kind=c_char, len=:), allocatable, target :: text
    if (len_trim(schedule) == 0) then
      status = keel_parallel_for_hinted_c(pool, keel_cstr(loop_id), begin, end, c_null_ptr, flags, &
                                          workload, size(workload, kind=c_size_t), body, ctx, stats)
    else
      text = keel_cstr(schedule)
      status = keel_parallel_for_hinted_c(pool, keel_cstr(loop_id), begin, end, c_loc(text), flags, &
                                          workload, size(workload, kind=c_size_t), body, ctx, stats)
    end if
  end function
end module keel
