! Geometric source terms of the Euler equations in r-z (x = r, y = z):
! q_t = -(1/r) (rho u, rho u^2, rho u w, u (E + p)), integrated over dt by a two-stage
! Runge-Kutta step on the interior cells (Godunov splitting, as the PyClaw variant does).
subroutine src2(meqn, mbc, mx, my, xlower, ylower, dx, dy, q, maux, aux, t, dt)
    implicit none
    integer, intent(in) :: mbc, mx, my, meqn, maux
    real(kind=8), intent(in) :: xlower, ylower, dx, dy, t, dt
    real(kind=8), intent(in) :: aux(maux, 1-mbc:mx+mbc, 1-mbc:my+mbc)
    real(kind=8), intent(inout) :: q(meqn, 1-mbc:mx+mbc, 1-mbc:my+mbc)
    real(kind=8) :: gamma
    common /cparam/ gamma
    integer :: i, j
    real(kind=8) :: r, qs(4), f(4)

    do j = 1, my
        do i = 1, mx
            r = xlower + (i - 0.5d0) * dx
            call rhs(q(:, i, j), r, f)
            qs = q(:, i, j) - 0.5d0 * dt * f
            call rhs(qs, r, f)
            q(:, i, j) = q(:, i, j) - dt * f
        end do
    end do

contains

    subroutine rhs(qq, rr, ff)
        real(kind=8), intent(in) :: qq(4), rr
        real(kind=8), intent(out) :: ff(4)
        real(kind=8) :: u, w, p
        u = qq(2) / qq(1)
        w = qq(3) / qq(1)
        p = (gamma - 1.d0) * (qq(4) - 0.5d0 * qq(1) * (u * u + w * w))
        ff(1) = qq(2) / rr
        ff(2) = qq(2) * u / rr
        ff(3) = qq(2) * w / rr
        ff(4) = u * (qq(4) + p) / rr
    end subroutine rhs

end subroutine src2
