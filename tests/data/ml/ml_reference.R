# Marginal maximum-likelihood (Bock-Aitkin EM, OpenMx's mxExpectationBA81 + rpf) item parameters
# of the real data sets under tests/data/, written beside them. Run from the repository root:
#   Rscript tests/data/ml/ml_reference.R
# Debian packages: r-base-core r-cran-openmx (pulls in r-cran-rpf) r-cran-psych r-cran-psychtools.
suppressMessages({library(OpenMx); library(rpf); library(psych); library(psychTools)})
mxOption(key = "Number of Threads", value = 1)

# Unidimensional GRM (2 categories: the 2PL) by EM; rpf's parametrisation is
# P(X >= k) = logistic(a theta + c_k), so the thresholds are b_k = -c_k / a.
fit_grm <- function(data) {
  outcomes <- sapply(data, function(x) length(unique(na.omit(x))))
  spec <- lapply(outcomes, function(k) rpf.grm(outcomes = k))
  for (j in seq_along(data)) data[[j]] <- mxFactor(data[[j]], levels = sort(unique(na.omit(data[[j]]))))
  n_par <- max(sapply(spec, rpf.numParam))
  start <- sapply(outcomes, function(k) c(1, seq(1, -1, length.out = k - 1), rep(NA, n_par - k)))
  ip <- mxMatrix(name = "item", nrow = n_par, ncol = length(data), values = start, free = !is.na(start))
  dimnames(ip) <- list(c("f1", paste0("c", seq_len(n_par - 1))), colnames(data))
  model <- mxModel("grm", ip, mxData(observed = data, type = "raw"),
                   mxExpectationBA81(ItemSpec = spec), mxFitFunctionML(),
                   mxComputeSequence(list(
                     mxComputeEM("expectation", "scores", mxComputeNewtonRaphson(), tolerance = 1e-9),
                     mxComputeOnce("fitfunction", "information", "meat"),
                     mxComputeStandardError(), mxComputeHessianQuality())))
  fit <- mxRun(model, silent = TRUE)
  values <- fit$item$values
  rows <- list()
  for (j in seq_along(data)) {
    a <- values[1, j]
    c <- values[2:outcomes[j], j]
    rows[[j]] <- data.frame(item = colnames(data)[j], a = a, step = seq_along(c), b = -c / a)
  }
  list(table = do.call(rbind, rows), loglik = -fit$output$fit / 2)
}

write_ml <- function(data, csv, ml, what) {
  write.csv(data, csv, row.names = FALSE, na = "")
  res <- fit_grm(data)
  write.csv(res$table, ml, row.names = FALSE)
  cat(what, ": log-likelihood", res$loglik, "\n")
}

data(bock)  # psych: lsat7, Bock & Lieberman (1970), LSAT section 7, 1,000 x 5
write_ml(as.data.frame(lsat7), "tests/data/lsat7/lsat7.csv", "tests/data/lsat7/ml_2pl_openmx.csv", "LSAT-7 2PL")
# psychTools: bfi, 2,800 x 25 personality items scored 1-6 (SAPA project), missing answers empty.
# The agreeableness scale as given (A1 is reverse-keyed: bfi.keys lists it as "-A1"), for the
# slope check; rpf bounds GRM slopes below at 1e-6, so ML cannot show the negative slope itself.
write.csv(bfi[, paste0("A", 1:5)], "tests/data/bfi/bfi_agreeableness.csv", row.names = FALSE, na = "")
write_ml(bfi[, paste0("N", 1:5)], "tests/data/bfi/bfi_neuroticism.csv", "tests/data/bfi/ml_grm_openmx_neuroticism.csv", "bfi N1-N5 GRM")
