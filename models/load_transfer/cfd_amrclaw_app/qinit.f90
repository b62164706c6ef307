! Initial blast: a sphere of radius r0 centred at (0, hc) at pratio * pamb, rhoratio * rhoamb, in
! gas at rest at (pamb, rhoamb). Cell averages by the radius-weighted volume fraction of nsub^2
! sub-cells (the axisymmetric volume element), as models/load_transfer/cfd_setup.py does.
subroutine qinit(meqn, mbc, mx, my, xlower, ylower, dx, dy, q, maux, aux)
    use blast_module, only: r0, hc, pratio, rhoratio, pamb, rhoamb
    implicit none
    integer, intent(in) :: meqn, mbc, mx, my, maux
    real(kind=8), intent(in) :: xlower, ylower, dx, dy
    real(kind=8), intent(inout) :: q(meqn, 1-mbc:mx+mbc, 1-mbc:my+mbc)
    real(kind=8), intent(inout) :: aux(maux, 1-mbc:mx+mbc, 1-mbc:my+mbc)
    real(kind=8) :: gamma
    common /cparam/ gamma
    integer, parameter :: nsub = 8
    integer :: i, j, a, b
    real(kind=8) :: rs, zs, w, win, wsum, f, rho, p

    do j = 1, my
        do i = 1, mx
            win = 0.d0
            wsum = 0.d0
            do a = 1, nsub
                rs = xlower + (i - 1 + (a - 0.5d0) / nsub) * dx
                do b = 1, nsub
                    zs = ylower + (j - 1 + (b - 0.5d0) / nsub) * dy
                    w = rs
                    wsum = wsum + w
                    if (rs**2 + (zs - hc)**2 <= r0**2) win = win + w
                end do
            end do
            f = win / wsum
            rho = rhoamb * (1.d0 + f * (rhoratio - 1.d0))
            p = pamb * (1.d0 + f * (pratio - 1.d0))
            q(1, i, j) = rho
            q(2, i, j) = 0.d0
            q(3, i, j) = 0.d0
            q(4, i, j) = p / (gamma - 1.d0)
        end do
    end do
end subroutine qinit
