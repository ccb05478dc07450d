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

# Confirmatory two-dimensional 2PL (rpf.grm with 2 outcomes and 2 factors: P = logistic(a'theta + d)),
# each item loading on its own dimension only, the abilities N(0, R) with the correlation free.
# Fitted by quasi-Newton on the marginal likelihood (31 x 31 Gauss-Hermite points on +-6; the
# EM + Newton-Raphson plan of the 1D fits does not update a free latent covariance).
fit_2d_2pl <- function(data, second) {
  spec <- lapply(seq_along(data), function(j) rpf.grm(outcomes = 2, factors = 2))
  for (j in seq_along(data)) data[[j]] <- mxFactor(data[[j]], levels = c(0, 1))
  on_second <- colnames(data) %in% second
  values <- rbind(ifelse(on_second, 0, 1), ifelse(on_second, 1, 0), 0)
  ip <- mxMatrix(name = "item", nrow = 3, ncol = ncol(data), values = values, free = values != 0)
  ip$free[3, ] <- TRUE
  dimnames(ip) <- list(c("f1", "f2", "c"), colnames(data))
  names <- list(c("f1", "f2"), c("f1", "f2"))
  cov <- mxMatrix("Symm", 2, 2, values = c(1, 0.5, 1), free = c(FALSE, TRUE, FALSE), lbound = -0.99, ubound = 0.99,
                  name = "cov", dimnames = names)
  mean <- mxMatrix("Full", 1, 2, values = 0, free = FALSE, name = "mean", dimnames = list(NULL, names[[1]]))
  model <- mxModel("mirt", ip, cov, mean, mxData(observed = data, type = "raw"),
                   mxExpectationBA81(ItemSpec = spec, mean = "mean", cov = "cov", qpoints = 31, qwidth = 6),
                   mxFitFunctionML(), mxComputeGradientDescent())
  fit <- mxRun(model, silent = TRUE)
  v <- fit$item$values
  items <- data.frame(item = colnames(data), dimension = ifelse(on_second, "spatial", "reasoning"),
                      a = ifelse(on_second, v[2, ], v[1, ]), d = v[3, ])
  list(items = items, summary = data.frame(corr = fit$cov$values[1, 2], loglik = -fit$output$fit / 2,
                                           status = fit$output$status$code))
}

# psychTools: ability, 1,525 SAPA respondents x 16 ICAR items (right/wrong, missing empty; Condon &
# Revelle 2014). OpenMx rejects "." in names, so "reason.4" is written "reason_4". Dimensions: the
# four 3D rotation items ("spatial") and the twelve others ("reasoning").
ability_data <- as.data.frame(ability)
colnames(ability_data) <- sub(".", "_", colnames(ability_data), fixed = TRUE)
write.csv(ability_data, "tests/data/ability/ability.csv", row.names = FALSE, na = "")
res <- fit_2d_2pl(ability_data, grep("^rotate", colnames(ability_data), value = TRUE))
write.csv(res$items, "tests/data/ability/ml_2d_2pl_openmx.csv", row.names = FALSE)
write.csv(res$summary, "tests/data/ability/ml_2d_2pl_openmx_summary.csv", row.names = FALSE)
cat("ability 2D 2PL: log-likelihood", res$summary$loglik, "corr", res$summary$corr, "\n")
