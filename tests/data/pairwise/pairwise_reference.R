# Real paired-comparison designs with judges, exported from Debian bookworm's R packages
# (r-cran-psychotree 0.16, r-cran-psychotools 0.7, r-cran-bradleyterry2 1.1) by
#   Rscript tests/data/pairwise/pairwise_reference.R      (from the repository root)
# Each <name>_wide.csv: one row per judge (paircomp subject), one column "a:b" per pair, the
# paircomp value: 1 = a preferred, -1 = b preferred, 0 = tie, empty = not compared.
# chameleons.csv: BradleyTerry2's contests (winner, loser); chameleons_br.csv the bias-reduced
# Bradley-Terry abilities BTm(..., br = TRUE) (reference level C01 = 0) and their s.e.
# <name>_btmodel.csv: the ML log worths of psychotools::btmodel without judges (mean 0).
suppressMessages({library(psychotree); library(psychotools); library(BradleyTerry2)})
out <- "tests/data/pairwise"
wide <- function(pc, name) {
  m <- as.matrix(pc); labs <- labels(pc)  # columns named "a:b" in paircomp's own pair order
  write.csv(data.frame(judge = seq_len(nrow(m)), m, check.names = FALSE), file.path(out, paste0(name, "_wide.csv")),
            row.names = FALSE, na = "")
  # the no-judge maximum-likelihood reference: psychotools' Bradley-Terry model (log-linear),
  # with an undecided (tie) parameter when the design has ties; log worth, mean 0
  fit <- btmodel(pc, undecided = any(m == 0, na.rm = TRUE))
  worth <- coef(itempar(fit, log = TRUE))
  write.csv(data.frame(item = labs, log_worth = worth - mean(worth)), file.path(out, paste0(name, "_btmodel.csv")), row.names = FALSE)
}
data(Topmodel2007); wide(Topmodel2007$preference, "topmodel2007")
data(GermanParties2009); wide(GermanParties2009$preference, "germanparties2009")
data(FirstNames); wide(FirstNames$preference, "firstnames")
data(CEMSChoice); wide(CEMSChoice$preference, "cemschoice")
data(SoundQuality); wide(SoundQuality$preference, "soundquality")
data(chameleons)
write.csv(data.frame(winner = chameleons$winner$ID, loser = chameleons$loser$ID), file.path(out, "chameleons.csv"), row.names = FALSE)
fit <- BTm(1, ID.1, ID.2, data = list(ID.1 = chameleons$winner$ID, ID.2 = chameleons$loser$ID), id = "ID", br = TRUE)
ab <- BTabilities(fit)
write.csv(data.frame(item = rownames(ab), ability = ab[, 1], se = ab[, 2]), file.path(out, "chameleons_br.csv"), row.names = FALSE)
