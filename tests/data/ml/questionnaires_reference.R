# Full-size questionnaires for the real-data checks of issue 64 (questionnaires at full size), written
# beside this folder, with the maximum-likelihood reference of the two-factor EPI model. Run from the
# repository root:
#   Rscript tests/data/ml/questionnaires_reference.R
# Debian packages: r-base-core r-cran-openmx (pulls in r-cran-rpf) r-cran-psychtools r-cran-psychotools.
suppressMessages({library(OpenMx); library(rpf); library(psychTools); library(psychotools)})
mxOption(key = "Number of Threads", value = 1)

# EPI: psychTools' epi (Eysenck Personality Inventory, 3,570 respondents x 57 yes/no items, 1 = yes,
# 2 = no), the Extraversion and Neuroticism items of epi.keys, keyed so that 1 is the keyed answer
# ("-" items reversed); respondents with no answer to the 48 items dropped.
data(epi)  # also loads epi.keys
keys <- c(epi.keys$E, epi.keys$N)
items <- sub("^-", "", keys)
yes <- epi[, items] == 1
reversed <- startsWith(keys, "-")
yes[, reversed] <- !yes[, reversed]
keyed <- as.data.frame(yes * 1L)
keyed <- keyed[rowSums(!is.na(keyed)) > 0, ]
write.csv(keyed, "tests/data/epi/epi_keyed.csv", row.names = FALSE, na = "")

# The ML confirmatory two-factor 2PL, P = logistic(a theta_dim + d), abilities N(0, R), by Bock-Aitkin
# EM (mxExpectationBA81 with a latent-distribution model for the correlation); qpoints 21 and 49
# per axis over +-6 give the same -2 log-likelihood to 0.1.
fit_epi <- function(data, qpoints) {
  n_e <- length(epi.keys$E)
  for (j in seq_along(data)) data[[j]] <- mxFactor(data[[j]], levels = 0:1)
  start <- matrix(0, 5, ncol(data), dimnames = list(c("E", "N", "d", "g", "u"), names(data)))
  start["E", 1:n_e] <- 1; start["N", -(1:n_e)] <- 1; start["g", ] <- -Inf; start["u", ] <- Inf
  free <- start == 1; free["d", ] <- TRUE
  ip <- mxMatrix(name = "item", values = start, free = free, dimnames = dimnames(start))
  mean <- mxMatrix("Full", 1, 2, values = 0, free = FALSE, name = "mean", dimnames = list(NULL, c("E", "N")))
  cov <- mxMatrix("Symm", 2, 2, values = c(1, 0, 1), free = c(FALSE, TRUE, FALSE), lbound = c(NA, -0.99, NA),
                  ubound = c(NA, 0.99, NA), name = "cov", dimnames = list(c("E", "N"), c("E", "N")))
  latent <- mxModel("epilatent", mean, cov, mxDataDynamic("cov", expectation = "epi.expectation"),
                    mxExpectationNormal(covariance = "cov", means = "mean"), mxFitFunctionML())
  ifa <- mxModel("epi", ip, mxData(observed = data, type = "raw"), mxFitFunctionML(),
                 mxExpectationBA81(ItemSpec = rep(list(rpf.drm(factors = 2)), ncol(data)), mean = "epilatent.mean",
                                   cov = "epilatent.cov", qpoints = qpoints, qwidth = 6))
  plan <- mxComputeEM("epi.expectation", "scores", mxComputeSequence(list(
    mxComputeNewtonRaphson(freeSet = "epi.item"),
    mxComputeNewtonRaphson(freeSet = "epilatent.cov", fitfunction = "epilatent.fitfunction"))))
  model <- mxModel("both", ifa, latent, mxFitFunctionMultigroup("epi.fitfunction"), plan)
  seconds <- system.time(fit <- mxRun(model, silent = TRUE))[["elapsed"]]
  list(fit = fit, seconds = seconds)
}

epi_data <- read.csv("tests/data/epi/epi_keyed.csv")
res <- fit_epi(epi_data, 21L)
values <- res$fit$epi$item$values
dims <- ifelse(values["E", ] != 0, "E", "N")
a <- ifelse(dims == "E", values["E", ], values["N", ])
write.csv(data.frame(item = colnames(values), dimension = dims, a = a, d = values["d", ]),
          "tests/data/epi/ml_2d_2pl_openmx.csv", row.names = FALSE)
summary <- data.frame(correlation = res$fit$epilatent$cov$values[1, 2], loglik = -res$fit$output$fit / 2,
                      qpoints = 21, em_cycles = res$fit$compute$output$EMcycles, seconds = res$seconds)
write.csv(summary, "tests/data/epi/ml_2d_2pl_openmx_summary.csv", row.names = FALSE)
cat("EPI: correlation", summary$correlation, "log-likelihood", summary$loglik, "seconds", res$seconds, "\n")

# ConspiracistBeliefs2016 (psychotools): 2,449 respondents x 15 items of the Generic Conspiracist
# Beliefs scale, 5 categories (0-4); the 2,356 complete rows (girth's grm_mml takes no missing answers).
data(ConspiracistBeliefs2016)
beliefs <- as.data.frame(unclass(ConspiracistBeliefs2016$resp))
names(beliefs) <- paste0("q", seq_len(ncol(beliefs)))
beliefs <- beliefs[complete.cases(beliefs), ]
write.csv(beliefs, "tests/data/conspiracist/conspiracist_beliefs.csv", row.names = FALSE)
cat("ConspiracistBeliefs2016:", nrow(beliefs), "complete rows\n")
