! Read gamma (common /cparam/, used by the Riemann solvers) and the blast parameters.
subroutine setprob()
    use blast_module, only: r0, hc, pratio, rhoratio, pamb, rhoamb, flagtol
    implicit none
    real(kind=8) :: gamma
    common /cparam/ gamma
    integer, parameter :: iunit = 7

    call opendatafile(iunit, 'setprob.data')
    read(iunit, *) gamma
    read(iunit, *) r0
    read(iunit, *) hc
    read(iunit, *) pratio
    read(iunit, *) rhoratio
    read(iunit, *) pamb
    read(iunit, *) rhoamb
    read(iunit, *) flagtol
    close(iunit)
end subroutine setprob
