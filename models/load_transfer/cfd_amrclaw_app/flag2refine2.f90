! Refinement criterion: flag a cell where the pressure jump to a neighbour, relative to the
! ambient pressure, exceeds flagtol (|p(i+1) - p(i-1)| or |p(j+1) - p(j-1)| > flagtol * pamb).
subroutine flag2refine2(mx, my, mbc, mbuff, meqn, maux, xlower, ylower, dx, dy, t, level, &
                        tolsp, q, aux, amrflags)
    use amr_module, only: DOFLAG, UNSET
    use blast_module, only: pamb, flagtol
    implicit none
    integer, intent(in) :: mx, my, mbc, meqn, maux, level, mbuff
    real(kind=8), intent(in) :: xlower, ylower, dx, dy, t, tolsp
    real(kind=8), intent(in) :: q(meqn, 1-mbc:mx+mbc, 1-mbc:my+mbc)
    real(kind=8), intent(inout) :: aux(maux, 1-mbc:mx+mbc, 1-mbc:my+mbc)
    real(kind=8), intent(inout) :: amrflags(1-mbuff:mx+mbuff, 1-mbuff:my+mbuff)
    real(kind=8) :: gamma
    common /cparam/ gamma
    integer :: i, j

    do j = 1, my
        do i = 1, mx
            if (amrflags(i, j) == UNSET) then
                if (abs(pr(i + 1, j) - pr(i - 1, j)) > flagtol * pamb .or. &
                    abs(pr(i, j + 1) - pr(i, j - 1)) > flagtol * pamb) then
                    amrflags(i, j) = DOFLAG
                end if
            end if
        end do
    end do

contains

    real(kind=8) function pr(ii, jj)
        integer, intent(in) :: ii, jj
        pr = (gamma - 1.d0) * (q(4, ii, jj) - 0.5d0 * (q(2, ii, jj)**2 + q(3, ii, jj)**2) / q(1, ii, jj))
    end function pr

end subroutine flag2refine2
