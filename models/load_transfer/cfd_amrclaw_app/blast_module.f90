! Parameters of the r-z blast (SI), read by setprob from setprob.data.
module blast_module
    implicit none
    real(kind=8) :: r0, hc, pratio, rhoratio, pamb, rhoamb, flagtol
    save
end module blast_module
